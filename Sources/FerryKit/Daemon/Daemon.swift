import Dispatch
import Foundation
import Logging

/// `ferryd`'s whole life on the main thread's run loop: open the replica, tell systemd it is
/// ready, run the scheduler, reload on SIGHUP, drain and exit on SIGTERM or SIGINT.
///
/// READY=1 is sent only once the configuration is valid and the database is open; every
/// reload sends RELOADING=1 (with MONOTONIC_USEC) first and READY=1 after, and publishes its
/// outcome for `ferry reload`, which is what makes `systemctl reload` synchronous on systemd 252.
///
/// Confined to the main thread (signals, timers and passes post back to it), which is what
/// makes the `@unchecked Sendable` sound.
public final class Daemon: @unchecked Sendable {
    enum State {
        case created
        case running(Scheduler)
        /// Draining passes; the code the process exits with when they are done (or a second
        /// signal stops the wait): 0 for a signal, the integrity check's for a damaged replica.
        case stopping(exitCode: Int32)
        case stopped(exitCode: Int32)
    }

    let configurationPath: String
    let environment: [String: String]
    let database: SharedDatabase
    let notifier: SystemdNotifier
    let logger: Logger
    var state = State.created
    var reloadGeneration = 0
    var signalWaiter: SignalWaiter?
    var schedulerEnvironment: LiveSchedulerEnvironment?

    /// The configuration as loaded, and what runs of it.
    let expansion: StoreExpansion
    var configuration: FerryConfiguration { expansion.configuration }
    let status: StatusPublisher
    private var refreshPacing = RefreshPacing(gap: Daemon.statusRefreshGap)
    var refreshTimer: MovableTimer?
    let metrics: MetricsService
    /// The HTTP listeners (metrics, notifications, the control socket), made once the daemon
    /// is whole, since what they receive is posted to it.
    lazy var listeners: ListenerService = {
        // Weak: the listeners' closures outlive nothing, but must not keep the daemon either.
        let daemon = WeakDaemon(self)
        return ListenerService(
            figures: metrics.figures, environment: environment, logger: logger,
            controlSocket: PassAnswer.socketPath(runtimeDirectory: configuration.global.runtimeDirectory),
            trigger: { store in RunLoopHandle.main.perform { daemon.value?.notified(store) } },
            passRequest: { store, respond in
                RunLoopHandle.main.perform {
                    guard let daemon = daemon.value else { return respond(ListenerAnswer(503, "ferryd is stopping\n")) }
                    daemon.passRequested(store, respond: respond)
                }
            })
    }()
    let heartbeats: DaemonHeartbeats
    /// Every service, in the order each is configured, started, told of a pass and stopped:
    /// what shows the daemon's state first, the listeners before the timers that act.
    lazy var services: [any DaemonService] = [
        status, metrics, listeners, heartbeats,
        LocalWriteWatch(database: database, logger: logger),
        ChangeLogPruner(database: database, logger: logger),
        WatchdogService(notifier: notifier, logger: logger),
    ]
    /// `ferry sync --now` requests waiting for their pass to end.
    var passWaiters = PassWaiters<@Sendable (ListenerAnswer) -> Void>()

    /// The least time between two refreshes that a pass's end asks for (``RefreshPacing``).
    static let statusRefreshGap = Duration.seconds(1)

    /// Loads and validates the configuration and opens the database. Throws
    /// `ConfigurationErrors` or the store's error, for `ferryd` to print and map to an exit code.
    public init(configurationPath: String, environment: [String: String] = ProcessInfo.processInfo.environment, logger: Logger) throws {
        self.configurationPath = configurationPath
        self.environment = environment
        self.logger = logger
        notifier = SystemdNotifier(logger: logger)
        // A store with problems of its own is left out and reported; the others run.
        let loaded = try ConfigurationLoader.load(path: configurationPath, environment: environment, storeProblems: .setStoreApart)
        // A large replica is checked after READY=1, while passes run (``startIntegrityCheck()``).
        database = try SharedDatabase(path: loaded.global.databasePath,
                                      deferIntegrityCheckAbove: ReplicaDatabase.integrityCheckedBeforeUseUpTo)
        expansion = StoreExpansion(loaded, database: database, logger: logger)
        status = .live(notifier: notifier, runtimeDirectory: loaded.global.runtimeDirectory, databasePath: database.path, logger: logger)
        metrics = MetricsService(database: database)
        heartbeats = DaemonHeartbeats(logger: logger)
        configureServices(expansion.running)
    }

    /// Tells every service what runs.
    func configureServices(_ running: FerryConfiguration) {
        for service in services { service.configure(running) }
        status.line.metricsProblem = listeners.problem
    }

    /// Runs until stopped; returns the process exit code. Call on the main thread.
    public func run() -> Int32 {
        precondition(Thread.isMainThread, "the daemon runs on the main thread's run loop")
        guard case .created = state else { preconditionFailure("Daemon.run() called twice") }
        installSignalHandlers()
        let runtime = configuration.global.runtimeDirectory
        do {
            try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true)
            try ReloadAcknowledgement.writePIDFile(directory: runtime)
            try ReloadAcknowledgement.publish(generation: reloadGeneration, result: .ok, message: "started", directory: runtime)
        } catch {
            // Without the runtime directory only `ferry reload` degrades; syncing goes on.
            logger.warning("cannot write to the runtime directory \(runtime): \(error); `ferry reload` will not work")
        }

        let environment = LiveSchedulerEnvironment(database: database, logger: logger)
        let scheduler = Scheduler(configuration: expansion.running, environment: environment, logger: logger)
        environment.scheduler = scheduler
        environment.metrics = metrics.figures
        environment.storeNames = Set(configuration.stores.map(\.name))
        schedulerEnvironment = environment
        scheduler.onPassFinished = { [weak self, weak scheduler] store, outcome in
            guard let self, let scheduler else { return }
            self.passFinished(store, outcome, scheduler: scheduler)
        }
        state = .running(scheduler)
        for service in services { service.start(self) }
        status.line.metricsProblem = listeners.problem
        logger.info("ferryd \(FerryVersion.current) ready: \(configuration.stores.count) store(s), database \(database.path)", metadata: MessageID.ready.metadata)
        logWarnings(configuration)
        notifier.ready(status: status.render(scheduler.snapshot))
        scheduler.start()
        if database.integrityCheckDeferred { startIntegrityCheck() }

        while true {
            if case .stopped(let exitCode) = state { return exitCode }
            _ = RunLoop.current.run(mode: .default, before: .distantFuture)
        }
    }

    /// After a pass: an account's members as the pass left them start, stop or change in the
    /// schedule (a new one syncs at once, with the sync-token discovery read for it); the pass
    /// is counted and pinged; a store that starts failing shows at once (STATUS=, and `ferry
    /// status` through the failures a full or read-only replica could not record), the rest
    /// at the next refresh.
    private func passFinished(_ store: String, _ outcome: Result<PassReport, SyncError>, scheduler: Scheduler) {
        if case .success(let report) = outcome, expansion.expands(store) {
            if let running = expansion.passFinished(store) {
                configureServices(running)
                scheduler.apply(running)
            }
            scheduler.accountDiscovered(store, tokens: report.collectionTokens)
        }
        for service in services { service.passFinished(store, outcome) }
        answerPassWaiters(store, outcome)
        if case .failure(let error) = outcome, error.kind != .cancelled, error.kind != .busy, scheduler.nextPass(of: store)?.failures == 1 {
            refreshStatus()
        } else {
            refreshStatusSoon()
        }
    }

    // MARK: - Status

    /// Refreshes now, or once ``statusRefreshGap`` has passed since the last refresh.
    private func refreshStatusSoon() {
        switch refreshPacing.ask(now: .now) {
        case .now:
            refreshStatus()
        case .at(let due):
            let timer = refreshTimer ?? MovableTimer { [weak self] in self?.refreshStatus() }
            refreshTimer = timer
            timer.fire(after: (due - .now).seconds)
        case .alreadyWaiting:
            break
        }
    }

    /// STATUS=, the runtime directory's files, the process's metrics and the daemon's heartbeat.
    func refreshStatus() {
        guard case .running(let scheduler) = state else { return }
        refreshPacing.refreshed(at: .now)
        let snapshot = scheduler.snapshot
        status.publish(snapshot)
        status.publishSchedule(of: scheduler)
        metrics.figures.refresh(.init(running: snapshot.running.count, waiting: snapshot.waiting))
        heartbeats.daemon(healthy: snapshot.failing.isEmpty && snapshot.incomplete.isEmpty, heartbeat: configuration.global.heartbeat)
    }
}

extension Daemon: DaemonServiceHost {
    var runningScheduler: Scheduler? {
        guard case .running(let scheduler) = state else { return nil }
        return scheduler
    }

    var global: GlobalConfiguration { configuration.global }
}

/// A weak reference the listeners' thread may hold; read only on the daemon's thread.
private final class WeakDaemon: @unchecked Sendable {
    weak var value: Daemon?
    init(_ value: Daemon) { self.value = value }
}
