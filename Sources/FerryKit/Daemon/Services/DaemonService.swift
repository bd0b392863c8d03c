/// A part of ferryd that runs beside its scheduler: the status it shows, its metrics, its
/// listeners, the watch on local writes, the change-log pruning, the watchdog and the
/// heartbeats.
///
/// The daemon calls every service on its own thread, in the order it lists them:
/// ``configure(_:)`` with what runs (when the daemon is made, after each reload, when an
/// account's members change), ``start(_:)`` once when it is ready, ``passFinished(_:_:)``
/// after each pass, and ``stop()`` once when it begins to stop. A service asks the daemon
/// for what it needs through its ``DaemonServiceHost``, which it holds weakly.
protocol DaemonService: AnyObject {
    /// What runs now: every store, each account's members, the global settings.
    func configure(_ running: FerryConfiguration)
    /// The daemon is ready and its scheduler runs; timers, listeners and pings begin.
    func start(_ host: any DaemonServiceHost)
    /// A pass of `store` ended; the scheduler has already set its next pass.
    func passFinished(_ store: String, _ outcome: Result<PassReport, SyncError>)
    /// The daemon is stopping: nothing more is sent, served or written by this service.
    func stop()
}

extension DaemonService {
    func configure(_ running: FerryConfiguration) {}
    func passFinished(_ store: String, _ outcome: Result<PassReport, SyncError>) {}
}

/// What the daemon offers its services.
protocol DaemonServiceHost: AnyObject {
    /// The scheduler while the daemon runs; nil once it is stopping.
    var runningScheduler: Scheduler? { get }
    /// The global settings as they run now (a reload may have changed them).
    var global: GlobalConfiguration { get }
    /// Shows how the daemon stands now: STATUS=, the runtime directory's files, the process's
    /// metrics and the daemon's heartbeat.
    func refreshStatus()
}
