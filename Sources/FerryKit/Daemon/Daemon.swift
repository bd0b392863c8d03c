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
            trigger: { store in RunLoopHandle.main.perform { daemon.value?.notified(store) } },
            passRequest: { store, respond in
                RunLoopHandle.main.perform {
                    guard let daemon = daemon.value else { return respond(ListenerAnswer(503, "ferryd is stopping\n")) }
                    daemon.passRequested(store, respond: respond)
                }
            })
    }()
    private let localWrites: LocalWriteWatch
    let pruner: ChangeLogPruner
    let watchdog: WatchdogService
    var heartbeats: DaemonHeartbeats?
    var timers: [RepeatingTimer] = []
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
        metrics = MetricsService(databasePath: loaded.global.databasePath)
        localWrites = LocalWriteWatch(database: database, logger: logger)
        pruner = ChangeLogPruner(database: database, logger: logger)
        watchdog = WatchdogService(notifier: notifier, logger: logger)
        configureServices(expansion.running)
    }

    /// Tells the services that follow what runs (heartbeats, the local-write watch, metrics).
    func configureServices(_ running: FerryConfiguration) {
        heartbeats?.configure(running)
        localWrites.configure(running)
        metrics.figures.retain(stores: Set(running.stores.map(\.name)))
        listeners.desk.configure(running)
        metrics.figures.refuse(stores: Set(running.refusedStores.map(\.name)))
        let now = Date()
        status.refused = Dictionary(running.refusedStores.map { ($0.name, UnrecordedFailures.Failure(at: now, message: "store \($0.name): \($0.summary)")) },
                                    uniquingKeysWith: { first, _ in first })
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
        if let recorded = try? database.writeIfOpen({ database throws(StoreError) in try database.syncStates() }) {
            metrics.figures.seed(from: recorded)
        }
        serveListeners(configuration.global)
        heartbeats = DaemonHeartbeats(logger: logger) { [weak self] in self?.refreshStatus() }
        heartbeats?.configure(expansion.running)
        scheduler.onPassFinished = { [weak self, weak scheduler] store, outcome in
            guard let self, let scheduler else { return }
            self.passFinished(store, outcome, scheduler: scheduler)
        }
        scheduler.onPassStartDelay = { [metrics] _, trigger, delay in metrics.figures.passStarted(trigger: trigger, delay: delay) }
        state = .running(scheduler)
        logger.info("ferryd \(FerryVersion.current) ready: \(configuration.stores.count) store(s), database \(database.path)", metadata: MessageID.ready.metadata)
        logWarnings(configuration)
        notifier.ready(status: status.render(scheduler.snapshot))
        scheduler.start()
        startTimers(scheduler)
        if database.integrityCheckDeferred { startIntegrityCheck() }

        while true {
            if case .stopped(let exitCode) = state { return exitCode }
            _ = RunLoop.current.run(mode: .default, before: .distantFuture)
        }
    }

    private func startTimers(_ scheduler: Scheduler) {
        timers.append(RepeatingTimer(every: 5, tolerance: 1) { [weak self] in self?.refreshStatus() })
        // Local writes to push stores are pushed within about a second of their commit; the
        // schedule a pass's end left unpublished is published within a second too.
        timers.append(RepeatingTimer(every: 1, tolerance: 0.2) { [weak self, weak scheduler] in
            guard let self, let scheduler, case .running = self.state else { return }
            let written = self.localWrites.storesWritten()
            if !written.isEmpty { scheduler.passSoon(written) }
            self.status.publishSchedule(of: scheduler)
        })
        pruner.start { [weak self] in self?.configuration.global.changeRetention ?? .seconds(0) }
        watchdog.start { [weak self] in
            guard case .running(let scheduler) = self?.state else { return nil }
            return scheduler.snapshot.wedged
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
        let next = scheduler.nextPass(of: store)
        metrics.passFinished(store, outcome, next: next.map { ($0.at, $0.failures) })
        answerPassWaiters(store, outcome)
        heartbeats?.passFinished(store, outcome)
        if case .failure(let error) = outcome, error.kind != .cancelled, error.kind != .busy, next?.failures == 1 {
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
    private func refreshStatus() {
        guard case .running(let scheduler) = state else { return }
        refreshPacing.refreshed(at: .now)
        let snapshot = scheduler.snapshot
        status.publish(snapshot)
        status.publishSchedule(of: scheduler)
        metrics.figures.refresh(.init(running: snapshot.running.count, waiting: snapshot.waiting))
        heartbeats?.daemon(healthy: snapshot.failing.isEmpty && snapshot.incomplete.isEmpty, heartbeat: configuration.global.heartbeat)
    }
}

/// A weak reference the listeners' thread may hold; read only on the daemon's thread.
private final class WeakDaemon: @unchecked Sendable {
    weak var value: Daemon?
    init(_ value: Daemon) { self.value = value }
}
