import Logging

/// Pings systemd's watchdog while the main loop runs (its timer fires), at the interval
/// systemd asks for.
///
/// A pass that makes no progress is the scheduler's to cancel, and other stores go on; only a
/// pass that ignores its cancellation for a whole stuck-pass timeout (a thread wedged in a
/// call that never returns) withholds the ping, because then only a restart frees it.
final class WatchdogService: DaemonService {
    private let period: Duration?
    private let ping: () -> Void
    private let logger: Logger
    private weak var host: (any DaemonServiceHost)?
    private var timer: RepeatingTimer?
    /// The stores whose wedged pass the journal has been told of, once each while it lasts.
    private(set) var reportedStuck: Set<String> = []

    /// Whether pings are being sent.
    var isPinging: Bool { timer != nil }

    /// Pings through `notifier` at the interval systemd asked for, if it asked.
    convenience init(notifier: SystemdNotifier, logger: Logger) {
        self.init(period: notifier.watchdogPingInterval, ping: { notifier.watchdog() }, logger: logger)
    }

    /// `period`: how often to ping (nil: systemd has no watchdog for the unit, nothing is sent).
    init(period: Duration?, ping: @escaping () -> Void, logger: Logger) {
        self.period = period
        self.ping = ping
        self.logger = logger
    }

    func start(_ host: any DaemonServiceHost) {
        self.host = host
        guard let period else { return }
        timer = RepeatingTimer(every: period.seconds) { [weak self] in self?.tick() }
        tick()
    }

    func stop() {
        timer?.invalidate()
        timer = nil
    }

    /// One ping, unless a pass is wedged or the daemon no longer runs.
    func tick() {
        guard period != nil, let wedged = host?.runningScheduler?.snapshot.wedged else { return }
        guard !wedged.isEmpty else {
            reportedStuck.removeAll()
            ping()
            return
        }
        for store in wedged where !reportedStuck.contains(store) {
            logger.critical("store \(store): its pass ignored its cancellation for a whole stuck-pass-timeout; withholding the watchdog ping so systemd restarts ferryd",
                            metadata: MessageID.watchdogStuck.metadata.merging(["store": "\(store)"]) { $1 })
            reportedStuck.insert(store)
        }
    }
}
