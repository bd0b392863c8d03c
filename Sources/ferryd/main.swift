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
        discussion: "Reads its configuration once at start and again on SIGHUP; SIGTERM stops it within 2 s.",
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
        let level = (try? ConfigurationLoader.load(path: path, environment: environment))?.global.logLevel ?? .info
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

FerryDaemonCommand.main()
