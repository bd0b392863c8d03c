import Foundation
import Logging

/// Finds the push stores another program wrote to since the last look (the replica's
/// `data_version` and outbox), once a second, so ferryd pushes within about a second of a
/// local commit instead of at the store's next pass.
final class LocalWriteWatch: DaemonService {
    private let database: SharedDatabase
    private let logger: Logger
    private let every: TimeInterval
    private weak var host: (any DaemonServiceHost)?
    private var timer: RepeatingTimer?
    /// The stores with `push = yes`; worked out when what runs changes, not at every look.
    private(set) var pushStores: Set<String> = []

    /// Whether the watch's timer is armed.
    var isWatching: Bool { timer != nil }

    init(database: SharedDatabase, logger: Logger, every: TimeInterval = 1) {
        self.database = database
        self.logger = logger
        self.every = every
    }

    func configure(_ running: FerryConfiguration) {
        pushStores = Set(running.stores.filter(\.writeBack.push).map(\.name))
    }

    func start(_ host: any DaemonServiceHost) {
        self.host = host
        timer = RepeatingTimer(every: every, tolerance: every / 5) { [weak self] in self?.tick() }
    }

    func stop() {
        timer?.invalidate()
        timer = nil
    }

    /// One look: the stores written to pass soon.
    func tick() {
        guard let scheduler = host?.runningScheduler else { return }
        let written = storesWritten()
        if !written.isEmpty { scheduler.passSoon(written) }
    }

    /// The push stores written to since the last look (empty when none, or the look failed:
    /// the next pass of each store pushes anyway, and a failing replica shows there).
    func storesWritten() -> Set<String> {
        guard !pushStores.isEmpty else { return [] }
        let pushing = pushStores
        do {
            let stores = try database.writeIfOpen { database throws(StoreError) in try database.storesWithLocalWrites(among: pushing) }
            return (stores ?? nil) ?? []
        } catch {
            logger.warning("looking for local writes failed: \(error)")
            return []
        }
    }
}
