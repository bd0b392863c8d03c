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
        discussion: FerryExitCode.helpText,
        version: FerryVersion.current,
        subcommands: [SyncCommand.self, PushCommand.self, ResyncCommand.self, AuthCommand.self, ConflictsCommand.self, StatusCommand.self, CheckConfigCommand.self, DiscoverCommand.self, ReloadCommand.self,
                      ChangesCommand.self, LogCommand.self])

    /// ArgumentParser's own `main`, but a usage error is one line on stderr, `ferry: ...`,
    /// exit 64, as every other error of ferry is (its default prints the error, the usage and
    /// a help hint: three lines a script has to parse).
    static func main() {
        let names = configuration.subcommands.map { $0.configuration.commandName ?? "" }
        if let typo = SubcommandTypo.message(arguments: Array(CommandLine.arguments.dropFirst()), subcommands: names) {
            FileHandle.standardError.write(Data("ferry: \(typo) (see ferry --help)\n".utf8))
            Foundation.exit(ExitCode.validationFailure.rawValue)
        }
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch {
            if !(error is ExitCode), exitCode(for: error) == .validationFailure {
                let message = message(for: error).split(separator: "\n").first.map(String.init) ?? "invalid arguments"
                FileHandle.standardError.write(Data("ferry: \(message) (see ferry --help)\n".utf8))
                Foundation.exit(ExitCode.validationFailure.rawValue)
            }
            exit(withError: error)
        }
    }
}

/// `--instance NAME`: the files of `ferryd@NAME.service` instead of the default ones.
struct InstanceOption: ParsableArguments {
    @Option(help: "Reach the instance ferryd@NAME: /etc/ferry/NAME.conf, /var/lib/ferry/NAME/, /run/ferry-NAME/ (default: $FERRY_INSTANCE).")
    var instance: String?

    /// The instance chosen, if any.
    func chosen() throws -> FerryInstance? {
        try instance.map { name throws(InstanceNameError) in try FerryInstance(name) } ?? FerryInstance.fromEnvironment(ProcessInfo.processInfo.environment)
    }

    /// The process environment as the instance's unit sets it (unchanged without an instance).
    func environment() throws -> [String: String] {
        let base = ProcessInfo.processInfo.environment
        return try chosen()?.environment(base) ?? base
    }
}

/// Options every subcommand that reads the configuration shares.
struct ConfigurationOptions: ParsableArguments {
    @Option(name: .shortAndLong, help: "The configuration file (default: $FERRY_CONFIG, else /etc/ferry/ferry.conf).",
            completion: .file(extensions: ["conf"]))
    var config: String?

    @Option(help: "Use this database instead of the configured one.", completion: .file(extensions: ["db", "sqlite", "sqlite3"]))
    var database: String?

    @OptionGroup var instance: InstanceOption

    /// The environment the configuration's defaults are taken from (an instance's directories).
    var environment: [String: String] { (try? instance.environment()) ?? ProcessInfo.processInfo.environment }

    /// The configuration; a store with problems of its own section is left out and named in
    /// ``FerryConfiguration/refusedStores`` (a command naming it refuses it, the others work).
    func load(secrets: SecretHandling = .resolve) throws -> FerryConfiguration {
        let environment = try instance.environment()
        return try ConfigurationLoader.load(path: config ?? ConfigurationLoader.defaultPath(environment: environment),
                                            environment: environment, secrets: secrets, storeProblems: .setStoreApart)
    }

    /// The configuration for a command that writes the replica: loaded, and refused (exit 64)
    /// when root would write the service's replica from another file (``ServiceReplicaGuard``).
    func loadForWriting(secrets: SecretHandling = .resolve) throws -> FerryConfiguration {
        let configuration: FerryConfiguration
        let file: String
        let serviceFile: String
        do {
            configuration = try load(secrets: secrets)
            let environment = try instance.environment()
            file = config ?? ConfigurationLoader.defaultPath(environment: environment)
            let chosen = try instance.chosen()
            serviceFile = chosen?.configurationPath ?? ConfigurationLoader.defaultPath(environment: [:])
        } catch {
            throw fail(error)
        }
        if let refusal = ServiceReplicaGuard.refusal(file: file, serviceFile: serviceFile, global: configuration.global, databaseOption: database) {
            FileHandle.standardError.write(Data("ferry: \(refusal)\n".utf8))
            throw ExitCode(FerryExitCode.usage.rawValue)
        }
        return configuration
    }
}

/// Prints `error` as `ferry: ...` on stderr and exits with its documented code.
func fail(_ error: any Error) -> ExitCode {
    FileHandle.standardError.write(Data("ferry: \(error)\n".utf8))
    return ExitCode(FerryExitCode.for(error).rawValue)
}

/// Whether standard output is a terminal (progress bars, tables) rather than a pipe.
var standardOutputIsTerminal: Bool { isatty(STDOUT_FILENO) == 1 }
/// The terminal's width when standard output is one ($COLUMNS, else the terminal's own), nil
/// for a pipe: tables for people fit the screen, and a pipe gets every character.
var terminalColumns: Int? {
    guard standardOutputIsTerminal else { return nil }
    if let columns = ProcessInfo.processInfo.environment["COLUMNS"].flatMap(Int.init), columns > 0 { return columns }
    var size = winsize()
    guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return 80 }
    return Int(size.ws_col)
}
var standardErrorIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }

/// Shell completion of store names: the stores of the configuration the command line names
/// with `--config`/`-c` (else `$FERRY_CONFIG`, else the service's), read without its secrets.
let storeNames = CompletionKind.custom { words, _, prefix in
    let environment = ProcessInfo.processInfo.environment
    var path = ConfigurationLoader.defaultPath(environment: environment)
    if let flag = words.lastIndex(where: { $0 == "--config" || $0 == "-c" }), flag + 1 < words.count { path = words[flag + 1] }
    guard let configuration = try? ConfigurationLoader.load(path: path, environment: environment, secrets: .referencesOnly) else { return [] }
    return configuration.stores.map(\.name).filter { $0.hasPrefix(prefix) }
}
