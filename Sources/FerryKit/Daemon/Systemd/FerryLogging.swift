import Foundation
import Logging
import Synchronization

/// The process's configured log level, shared by every logger's handler, so a reload that
/// changes `log-level` applies to loggers already made. A logger whose level is set on it
/// (`logger.logLevel = .debug`) keeps its own, as swift-log promises.
public final class LogLevelSetting: Sendable {
    private let value: Mutex<Logger.Level>

    public init(_ level: Logger.Level) {
        value = Mutex(level)
    }

    public var level: Logger.Level {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}

/// Chooses where Ferry's logs go and installs it as swift-log's backend.
///
///     FerryLogging.bootstrap(level: configuration.global.logLevel)   // once, first thing in main
///
/// journald (``JournalLogHandler``) when our stderr *is* a journal stream, i.e. systemd started us
/// with `StandardError=journal` and `JOURNAL_STREAM=dev:ino` matches `fstat(2)`: checking the
/// device and inode, not just the variable, matters because a child or a redirected
/// `ferryd 2>file` inherits the variable. Otherwise ``StderrLogHandler``.
public enum FerryLogging {
    public enum Destination: Sendable, Equatable {
        case journal
        case stderr
    }

    /// Where logs would go for this process.
    public static func destination(environment: [String: String] = ProcessInfo.processInfo.environment) -> Destination {
        guard let stream = environment["JOURNAL_STREAM"] else { return .stderr }
        var info = stat()
        guard fstat(STDERR_FILENO, &info) == 0 else { return .stderr }
        return journalStream(stream, matchesDevice: UInt64(info.st_dev), inode: UInt64(info.st_ino)) ? .journal : .stderr
    }

    /// Whether `JOURNAL_STREAM`'s `DEVICE:INODE` (decimal, as systemd.exec(5) writes it) names this file.
    public static func journalStream(_ value: String, matchesDevice device: UInt64, inode: UInt64) -> Bool {
        let parts = value.split(separator: ":")
        guard parts.count == 2, let streamDevice = UInt64(parts[0]), let streamInode = UInt64(parts[1]) else {
            return false
        }
        return streamDevice == device && streamInode == inode
    }

    /// The level every handler ``bootstrap(level:identifier:environment:)`` installed follows;
    /// ferryd sets it again when a reload changes `log-level`.
    public static let level = LogLevelSetting(.info)

    /// The handler for `destination`, following `setting`.
    public static func makeHandler(setting: LogLevelSetting, identifier: String = "ferryd",
                                   destination: Destination) -> any LogHandler {
        switch destination {
        case .journal: JournalLogHandler(identifier: identifier, setting: setting)
        case .stderr: StderrLogHandler(setting: setting)
        }
    }

    /// Installs the chosen handler for every `Logger`. swift-log allows this once per process.
    public static func bootstrap(level: Logger.Level, identifier: String = "ferryd",
                                 environment: [String: String] = ProcessInfo.processInfo.environment) {
        let destination = destination(environment: environment)
        Self.level.level = level
        LoggingSystem.bootstrap { _ in
            makeHandler(setting: Self.level, identifier: identifier, destination: destination)
        }
    }
}
