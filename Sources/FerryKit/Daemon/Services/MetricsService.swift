import Foundation

/// ferryd's metrics figures (``DaemonMetrics``), kept by the daemon's thread; the
/// ``ListenerService`` serves them at `/metrics`.
final class MetricsService: DaemonService {
    let figures: DaemonMetrics
    private let database: SharedDatabase
    private weak var host: (any DaemonServiceHost)?

    init(database: SharedDatabase) {
        self.database = database
        figures = DaemonMetrics(databasePath: database.path)
    }

    /// The stores that run are reported, new ones from zero; those refused are named.
    func configure(_ running: FerryConfiguration) {
        figures.retain(stores: Set(running.stores.map(\.name)))
        figures.refuse(stores: Set(running.refusedStores.map(\.name)))
    }

    /// Starts each store from what the replica recorded before this process, and counts how
    /// late passes start.
    func start(_ host: any DaemonServiceHost) {
        self.host = host
        if let recorded = try? database.writeIfOpen({ database throws(StoreError) in try database.syncStates() }) {
            figures.seed(from: recorded)
        }
        host.runningScheduler?.onPassStartDelay = { [figures] _, trigger, delay in figures.passStarted(trigger: trigger, delay: delay) }
    }

    /// A finished pass, counted with the schedule it leaves the store on.
    func passFinished(_ store: String, _ outcome: Result<PassReport, SyncError>) {
        var schedule = DaemonMetrics.Schedule(nextPass: nil, consecutiveFailures: 0)
        if let next = host?.runningScheduler?.nextPass(of: store) {
            schedule = .init(nextPass: Date().addingTimeInterval((next.at - ContinuousClock.now).seconds), consecutiveFailures: next.failures)
        }
        figures.passFinished(store, outcome: outcome, schedule: schedule)
    }

    /// Nothing to stop: the figures are served until the listeners stop.
    func stop() {}
}
