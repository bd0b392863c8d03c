import Dispatch
import Foundation
import Logging

/// Deletes change-log entries older than `keep-changes`: a minute after the daemon starts,
/// then hourly, off the main thread and in steps of 50,000 rows, so passes wait for the write
/// lock briefly at most.
final class ChangeLogPruner {
    static let step = 50_000
    private let database: SharedDatabase
    private let logger: Logger
    private var timer: RepeatingTimer?

    init(database: SharedDatabase, logger: Logger) {
        self.database = database
        self.logger = logger
    }

    /// `retention` is read at each prune, so a reload's `keep-changes` applies at the next.
    func start(retention: @escaping () -> Duration) {
        timer = RepeatingTimer(every: 3600, firstAfter: 60, tolerance: 30) { [weak self] in self?.prune(olderThan: retention()) }
    }

    func stop() {
        timer?.invalidate()
        timer = nil
    }

    private func prune(olderThan retention: Duration) {
        let database = self.database
        let logger = self.logger
        DispatchQueue.global().async {
            let cutoff = Date().addingTimeInterval(-retention.seconds)
            var total = 0
            do {
                while true {
                    guard let deleted = try database.writeIfOpen({ try $0.pruneChangeLog(keepingNewerThan: cutoff, keepingAtLeast: 0, limit: Self.step) }) else { return }
                    total += deleted
                    if deleted < Self.step { break }
                }
            } catch {
                logger.warning("pruning the change log failed: \(error)")
                return
            }
            if total > 0 { logger.info("pruned \(total) change-log entries older than keep-changes") }
        }
    }
}
