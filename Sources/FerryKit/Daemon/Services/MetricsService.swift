import Foundation
import Logging

/// ferryd's metrics: the figures (``DaemonMetrics``) and where they are served, from
/// `metrics-listen` or a socket systemd passed. A port that cannot be bound stops only the
/// metrics: syncing goes on, and ``problem`` says why until they are served.
final class MetricsService {
    let figures: DaemonMetrics
    /// Why metrics are not served although configured.
    private(set) var problem: String?
    private var listener: MetricsListener?
    private let environment: [String: String]
    private let logger: Logger

    init(databasePath: String, environment: [String: String], logger: Logger) {
        figures = DaemonMetrics(databasePath: databasePath)
        self.environment = environment
        self.logger = logger
    }

    /// Serves at `endpoint` (or on systemd's socket), replacing what was served before.
    func serve(_ endpoint: MetricsEndpoint?) {
        stop()
        problem = nil
        let figures = self.figures
        let render: @Sendable () -> String = { figures.render() }
        do {
            if let endpoint {
                listener = try MetricsListener(endpoint: endpoint, render: render)
            } else if let socket = MetricsListener.activatedSocket(environment: environment) {
                listener = MetricsListener(inheritedSocket: socket, render: render)
            }
        } catch {
            problem = error.description
            logger.error("\(error); syncing goes on without metrics", metadata: MessageID.metricsUnavailable.metadata)
            return
        }
        guard let listener else { return }
        listener.start()
        logger.info("serving Prometheus metrics on \(listener.boundTo) at /metrics")
    }

    func stop() {
        listener?.stop()
        listener = nil
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
