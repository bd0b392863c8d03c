import ArgumentParser
import FerryKit
import Foundation
import Logging

/// The daemon: parse arguments, build the daemon from the configuration, map errors to exit
/// codes. Everything else lives in FerryKit.
struct FerryDaemonCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ferryd",
        abstract: "Keep local SQLite replicas of remote stores up to date (run by systemd).",
        discussion: """
        Reads its configuration once at start and again on SIGHUP (or ferry reload), after which every store syncs \
        at once (no rebuild: that is ferry resync); SIGTERM stops it within 2 s, a second SIGTERM at once. Tells \
        systemd READY, STATUS, RELOADING, STOPPING and WATCHDOG (Type=notify). Exit statuses: 0 stopped by a signal; \
        64 usage; 74 the database cannot be opened, failed its integrity check, or this user may not read it or the \
        configuration; 78 the file cannot be read as a whole at start (the unit does not restart it; a store whose own section has problems \
        is left out and reported, and the others run); 1 anything else.
        """,
        version: FerryVersion.current)

    @Option(name: .shortAndLong, help: "The configuration file (default: $FERRY_CONFIG, else /etc/ferry/ferry.conf).")
    var config: String?

    func run() throws {
        // Before any thread exists, so every thread inherits the mask: a SIGTERM during a slow
        // start waits for the daemon's signal thread instead of killing the process silently.
        SignalWaiter.block([SIGHUP, SIGTERM, SIGINT])
        let environment = ProcessInfo.processInfo.environment
        let path = config ?? ConfigurationLoader.defaultPath(environment: environment)
        // The level is refined once the configuration is read; problems before that are errors anyway.
        let level = (try? ConfigurationLoader.load(path: path, environment: environment, storeProblems: .setStoreApart))?.global.logLevel ?? .info
        FerryLogging.bootstrap(level: level, identifier: "ferryd", environment: environment)
        let logger = Logger(label: "ferryd")
        let notifier = SystemdNotifier(logger: logger)
        let daemon: Daemon
        do {
            daemon = try Daemon(configurationPath: path, environment: environment, logger: logger)
        } catch {
            let code = FerryExitCode.for(error)
            logger.critical("cannot start: \(error)")
            notifier.errno(code == .configuration ? EINVAL : EIO)
            throw ExitCode(code.rawValue)
        }
        let code = daemon.run()
        if code != 0 { throw ExitCode(code) }
    }
}

// A usage error is one line, `ferryd: ...`, exit 64, as ferry's are.
do {
    var command = try FerryDaemonCommand.parseAsRoot()
    try command.run()
} catch {
    if !(error is ExitCode), FerryDaemonCommand.exitCode(for: error) == .validationFailure {
        let message = FerryDaemonCommand.message(for: error).split(separator: "\n").first.map(String.init) ?? "invalid arguments"
        FileHandle.standardError.write(Data("ferryd: \(message) (see ferryd --help)\n".utf8))
        exit(ExitCode.validationFailure.rawValue)
    }
    FerryDaemonCommand.exit(withError: error)
}
