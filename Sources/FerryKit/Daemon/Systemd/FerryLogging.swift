import Foundation
import Logging

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

    /// The handler for `destination`.
    public static func makeHandler(level: Logger.Level, identifier: String = "ferryd",
                                   destination: Destination) -> any LogHandler {
        switch destination {
        case .journal: JournalLogHandler(identifier: identifier, level: level)
        case .stderr: StderrLogHandler(level: level)
        }
    }

    /// Installs the chosen handler for every `Logger`. swift-log allows this once per process.
    public static func bootstrap(level: Logger.Level, identifier: String = "ferryd",
                                 environment: [String: String] = ProcessInfo.processInfo.environment) {
        let destination = destination(environment: environment)
        LoggingSystem.bootstrap { _ in
            makeHandler(level: level, identifier: identifier, destination: destination)
        }
    }
}
