import Foundation

/// ferryd's metrics figures (``DaemonMetrics``), kept by the daemon's thread; the
/// ``ListenerService`` serves them at `/metrics`.
final class MetricsService {
    let figures: DaemonMetrics

    init(databasePath: String) {
        figures = DaemonMetrics(databasePath: databasePath)
    }

    /// A finished pass, counted with the schedule it leaves the store on.
    func passFinished(_ store: String, _ outcome: Result<PassReport, SyncError>, next: (at: ContinuousClock.Instant, failures: Int)?) {
        var schedule = DaemonMetrics.Schedule(nextPass: nil, consecutiveFailures: 0)
        if let next {
            schedule = .init(nextPass: Date().addingTimeInterval((next.at - ContinuousClock.now).seconds), consecutiveFailures: next.failures)
        }
        figures.passFinished(store, outcome: outcome, schedule: schedule)
    }
}
