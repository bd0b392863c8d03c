import Logging

/// The daemon's heartbeat (healthy while every store is) and each store's own (after each of
/// its passes), pinged from the main thread.
///
/// The daemon's ping is sent from the main loop (each status refresh, and a timer set for
/// when the next ping is due): a main loop that stops turning stops the pings, which is what
/// a dead-man's switch is for, and pings keep their interval instead of waiting for the next
/// status tick.
final class DaemonHeartbeats: DaemonService {
    let pinger: HeartbeatPinger
    private(set) var storeHeartbeats: [String: HeartbeatConfiguration] = [:]
    private var timer: MovableTimer?
    private weak var host: (any DaemonServiceHost)?
    private var stopped = false

    /// Call on the main thread: the pings' answers arrive on its run loop.
    init(logger: Logger) {
        pinger = HeartbeatPinger(logger: logger)
    }

    /// When the daemon's next ping is due, `host` refreshes its status, which calls
    /// ``daemon(healthy:heartbeat:)``.
    func start(_ host: any DaemonServiceHost) {
        self.host = host
    }

    /// Takes each store's heartbeat from what runs.
    func configure(_ running: FerryConfiguration) {
        storeHeartbeats = Dictionary(uniqueKeysWithValues: running.stores.compactMap { store in store.heartbeat.map { (store.name, $0) } })
    }

    /// Pings the daemon's heartbeat if it is due or health changed, and sets the timer for
    /// the next one.
    func daemon(healthy: Bool, heartbeat: HeartbeatConfiguration?) {
        guard let heartbeat, !stopped else { return }
        pinger.report(.daemon, healthy: healthy, to: heartbeat)
        let next = pinger.nextPing(of: .daemon, interval: heartbeat.interval) ?? .now + heartbeat.interval
        let timer = self.timer ?? MovableTimer(tolerance: 0.05) { [weak self] in self?.host?.refreshStatus() }
        self.timer = timer
        timer.fire(after: max(0.05, (next - .now).seconds))
    }

    /// A store's own heartbeat: healthy when the pass succeeded and left the replica whole;
    /// a pass called off (a stop, a reload, another pusher) says nothing either way.
    func passFinished(_ store: String, _ outcome: Result<PassReport, SyncError>) {
        guard let heartbeat = storeHeartbeats[store], !stopped else { return }
        switch outcome {
        case .success(let report): pinger.report(.store(store), healthy: report.isComplete, to: heartbeat)
        case .failure(let error) where error.kind == .cancelled || error.kind == .busy: break
        case .failure: pinger.report(.store(store), healthy: false, to: heartbeat)
        }
    }

    /// Stops pings in flight and the timer; no more are sent.
    func stop() {
        stopped = true
        timer?.invalidate()
        pinger.cancel()
    }
}
