import Dispatch
import Foundation
import Logging

/// Deletes change-log entries older than `keep-changes`: a minute after the daemon starts,
/// then hourly, off the main thread and in steps of 50,000 rows, so passes wait for the write
/// lock briefly at most.
final class ChangeLogPruner: DaemonService {
    static let step = 50_000
    private let database: SharedDatabase
    private let logger: Logger
    private let firstAfter: TimeInterval
    private let every: TimeInterval
    private weak var host: (any DaemonServiceHost)?
    private var timer: RepeatingTimer?

    /// Whether the pruning timer is armed.
    var isScheduled: Bool { timer != nil }

    init(database: SharedDatabase, logger: Logger, firstAfter: TimeInterval = 60, every: TimeInterval = 3600) {
        self.database = database
        self.logger = logger
        self.firstAfter = firstAfter
        self.every = every
    }

    func start(_ host: any DaemonServiceHost) {
        self.host = host
        timer = RepeatingTimer(every: every, firstAfter: firstAfter, tolerance: 30) { [weak self] in self?.tick() }
    }

    func stop() {
        timer?.invalidate()
        timer = nil
    }

    /// One prune, in the background, with `keep-changes` as it runs now (a reload's applies
    /// at the next prune).
    func tick() {
        guard let retention = host?.global.changeRetention else { return }
        let (database, logger) = (self.database, self.logger)
        DispatchQueue.global().async { Self.prune(database, olderThan: retention, logger: logger) }
    }

    /// Deletes what is older than `retention` step by step; returns how many entries went
    /// (nil: the replica is closed, or the prune failed and said so).
    @discardableResult
    static func prune(_ database: SharedDatabase, olderThan retention: Duration, logger: Logger) -> Int? {
        let cutoff = Date().addingTimeInterval(-retention.seconds)
        var total = 0
        do {
            while true {
                guard let deleted = try database.writeIfOpen({ try $0.pruneChangeLog(keepingNewerThan: cutoff, keepingAtLeast: 0, limit: step) }) else { return nil }
                total += deleted
                if deleted < step { break }
            }
        } catch {
            logger.warning("pruning the change log failed: \(error)")
            return nil
        }
        if total > 0 { logger.info("pruned \(total) change-log entries older than keep-changes") }
        return total
    }
}
