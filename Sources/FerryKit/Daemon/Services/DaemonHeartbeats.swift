import Logging

/// The daemon's heartbeat (healthy while every store is) and each store's own (after each of
/// its passes), pinged from the main thread.
///
/// The daemon's ping is sent from the main loop (each status refresh, and a timer set for
/// when the next ping is due): a main loop that stops turning stops the pings, which is what
/// a dead-man's switch is for, and pings keep their interval instead of waiting for the next
/// status tick.
final class DaemonHeartbeats {
    private let pinger: HeartbeatPinger
    private var storeHeartbeats: [String: HeartbeatConfiguration] = [:]
    private var timer: MovableTimer?
    private let due: () -> Void

    /// `due` is called when the daemon's next ping is due; it should refresh the status,
    /// which calls ``daemon(healthy:heartbeat:)``. Call on the main thread.
    init(logger: Logger, due: @escaping () -> Void) {
        pinger = HeartbeatPinger(logger: logger)
        self.due = due
    }

    /// Takes each store's heartbeat from what runs.
    func configure(_ running: FerryConfiguration) {
        storeHeartbeats = Dictionary(uniqueKeysWithValues: running.stores.compactMap { store in store.heartbeat.map { (store.name, $0) } })
    }

    /// Pings the daemon's heartbeat if it is due or health changed, and sets the timer for
    /// the next one.
    func daemon(healthy: Bool, heartbeat: HeartbeatConfiguration?) {
        guard let heartbeat else { return }
        pinger.report(.daemon, healthy: healthy, to: heartbeat)
        let next = pinger.nextPing(of: .daemon, interval: heartbeat.interval) ?? .now + heartbeat.interval
        let timer = self.timer ?? MovableTimer(tolerance: 0.05, due)
        self.timer = timer
        timer.fire(after: max(0.05, (next - .now).seconds))
    }

    /// A store's own heartbeat: healthy when the pass succeeded and left the replica whole;
    /// a pass called off (a stop, a reload, another pusher) says nothing either way.
    func passFinished(_ store: String, _ outcome: Result<PassReport, SyncError>) {
        guard let heartbeat = storeHeartbeats[store] else { return }
        switch outcome {
        case .success(let report): pinger.report(.store(store), healthy: report.isComplete, to: heartbeat)
        case .failure(let error) where error.kind == .cancelled || error.kind == .busy: break
        case .failure: pinger.report(.store(store), healthy: false, to: heartbeat)
        }
    }

    /// Stops pings in flight and the timer (the daemon is stopping).
    func cancel() {
        timer?.invalidate()
        pinger.cancel()
    }
}
