import ArgumentParser
import FerryKit
import Foundation

/// The `ferry` command line: thin wrappers that parse arguments, call FerryKit, and map errors
/// to one-line messages and documented exit codes.
@main
struct Ferry: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ferry",
        abstract: "Sync remote stores into local SQLite replicas, and inspect them.",
        discussion: """
        Exit codes: 0 ok, 1 a pass or reload failed, 2 synced but a replica is incomplete (see ferry status), \
        64 usage, 65 a bad record under on-bad-record = fail, 69 remote unavailable or answering wrongly, \
        74 database error, 77 credentials refused, 78 invalid configuration, 130 interrupted.
        """,
        version: FerryVersion.current,
        subcommands: [SyncCommand.self, PushCommand.self, ConflictsCommand.self, StatusCommand.self, CheckConfigCommand.self, ReloadCommand.self,
                      ChangesCommand.self, LogCommand.self])
}

/// Options every subcommand that reads the configuration shares.
struct ConfigurationOptions: ParsableArguments {
    @Option(name: .shortAndLong, help: "The configuration file (default: $FERRY_CONFIG, else /etc/ferry/ferry.conf).")
    var config: String?

    @Option(help: "Use this database instead of the configured one.")
    var database: String?

    var path: String { config ?? ConfigurationLoader.defaultPath(environment: ProcessInfo.processInfo.environment) }

    func load(secrets: SecretHandling = .resolve) throws -> FerryConfiguration {
        try ConfigurationLoader.load(path: path, secrets: secrets)
    }
}

/// Prints `error` as `ferry: ...` on stderr and exits with its documented code.
func fail(_ error: any Error) -> ExitCode {
    FileHandle.standardError.write(Data("ferry: \(error)\n".utf8))
    return ExitCode(FerryExitCode.for(error).rawValue)
}

/// Whether standard output is a terminal (progress bars, tables) rather than a pipe.
var standardOutputIsTerminal: Bool { isatty(STDOUT_FILENO) == 1 }
var standardErrorIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }
