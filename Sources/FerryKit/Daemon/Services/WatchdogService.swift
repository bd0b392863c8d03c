import Logging

/// Pings systemd's watchdog while the main loop runs (its timer fires), at the interval
/// systemd asks for.
///
/// A pass that makes no progress is the scheduler's to cancel, and other stores go on; only a
/// pass that ignores its cancellation for a whole stuck-pass timeout (a thread wedged in a
/// call that never returns) withholds the ping, because then only a restart frees it.
final class WatchdogService {
    private let notifier: SystemdNotifier
    private let logger: Logger
    private var timer: RepeatingTimer?
    private var reportedStuck: Set<String> = []

    init(notifier: SystemdNotifier, logger: Logger) {
        self.notifier = notifier
        self.logger = logger
    }

    /// Starts pinging if systemd asked for it; `wedged` names the passes that ignore their
    /// cancellation now (nil: the daemon is no longer running, no ping).
    func start(wedged: @escaping () -> [String]?) {
        guard let period = notifier.watchdogPingInterval else { return }
        let tick = { [weak self] in
            guard let self, let stores = wedged() else { return }
            self.tick(wedged: stores)
        }
        timer = RepeatingTimer(every: period.seconds, tick)
        tick()
    }

    func stop() {
        timer?.invalidate()
        timer = nil
    }

    private func tick(wedged: [String]) {
        guard !wedged.isEmpty else {
            reportedStuck.removeAll()
            notifier.watchdog()
            return
        }
        for store in wedged where !reportedStuck.contains(store) {
            logger.critical("store \(store): its pass ignored its cancellation for a whole stuck-pass-timeout; withholding the watchdog ping so systemd restarts ferryd",
                            metadata: MessageID.watchdogStuck.metadata.merging(["store": "\(store)"]) { $1 })
            reportedStuck.insert(store)
        }
    }
}
