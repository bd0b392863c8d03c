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
    private enum State {
        case created
        case running(Scheduler)
        case stopping
        case stopped(exitCode: Int32)
    }

    private let configurationPath: String
    private let environment: [String: String]
    /// The configuration as loaded.
    private var configuration: FerryConfiguration {
        didSet {
            accountStores = Self.accountStores(configuration)
            expandAccounts()
        }
    }
    /// What runs: the configuration with every `dav-account` store's collections as stores of
    /// their own, as the replica records them (``FerryConfiguration/expandingAccounts(_:)``).
    private var running: FerryConfiguration {
        didSet {
            storeHeartbeats = Self.storeHeartbeats(running)
            pushStores = Self.pushStores(running)
            metrics.retain(stores: Set(running.stores.map(\.name)))
        }
    }
    /// Each store's heartbeat, by store name (a pass's end looks its store up here).
    private var storeHeartbeats: [String: HeartbeatConfiguration] = [:]
    /// The stores with `push = yes`, which the watch for local writes asks about every second.
    private var pushStores: Set<String> = []
    /// The `dav-account` stores, whose passes may find collections to add.
    private var accountStores: Set<String> = []
    private let database: SharedDatabase
    private let notifier: SystemdNotifier
    private let logger: Logger
    private var state = State.created
    private var reloadGeneration = 0
    private var signalWaiter: SignalWaiter?
    private var timers: [Timer] = []
    private var lastStatus = ""
    /// When STATUS= and what goes with it were last refreshed, and whether a refresh is
    /// already set to follow (``refreshStatusSoon()``).
    private var statusRefreshedAt = ContinuousClock.now - .seconds(60)
    private var statusRefreshPending = false
    /// The one timer of those refreshes, moved with `fireDate` (see ``refreshStatusSoon()``).
    private var statusRefreshTimer: Timer?
    /// Fires when the daemon's next heartbeat is due (``scheduleHeartbeat(_:)``).
    private var heartbeatTimer: Timer?
    private var heartbeats: HeartbeatPinger?
    /// What the runtime directory's ``UnrecordedFailures`` file says now.
    private var publishedUnrecorded: [String: UnrecordedFailures.Failure] = [:]
    private var reportedStuck: Set<String> = []
    /// Configuration errors of the last failed reload, kept in STATUS until a reload succeeds.
    private var reloadProblem: String?
    private let metrics: DaemonMetrics
    private var metricsListener: MetricsListener?
    /// Why metrics are not served although configured, kept in STATUS until they are.
    private var metricsProblem: String?
    /// The schedule last published for `ferry status`, and when.
    private var publishedSchedule: [String: PublishedSchedule.Entry]?
    private var schedulePublishedAt = ContinuousClock.now - .seconds(60)
    /// The scheduler's ``Scheduler/revision`` when the schedule was last compared.
    private var publishedRevision = -1
    private var schedulePublishFailed = false
    private var schedulerEnvironment: LiveSchedulerEnvironment?

    /// Loads and validates the configuration and opens the database. Throws
    /// `ConfigurationErrors` or the store's error, for `ferryd` to print and map to an exit code.
    public init(configurationPath: String, environment: [String: String] = ProcessInfo.processInfo.environment, logger: Logger) throws {
        self.configurationPath = configurationPath
        self.environment = environment
        self.logger = logger
        self.notifier = SystemdNotifier(logger: logger)
        let loaded = try ConfigurationLoader.load(path: configurationPath, environment: environment)
        configuration = loaded
        accountStores = Self.accountStores(loaded)
        // A large replica is checked after READY=1, while passes run (``startIntegrityCheck()``).
        database = try SharedDatabase(path: loaded.global.databasePath,
                                      deferIntegrityCheckAbove: ReplicaDatabase.integrityCheckedBeforeUseUpTo)
        metrics = DaemonMetrics(databasePath: loaded.global.databasePath)
        // Collections found by earlier passes sync from the start, before their account's
        // discovery runs again (or while it fails: the server may be down).
        running = loaded.expandingAccounts(Self.knownCollections(database, logger: logger))
        storeHeartbeats = Self.storeHeartbeats(running)
        pushStores = Self.pushStores(running)
        metrics.retain(stores: Set(running.stores.map(\.name)))
    }

    /// Brings ``running`` in line with the configuration and the collections the replica records.
    private func expandAccounts() {
        running = configuration.expandingAccounts(Self.knownCollections(database, logger: logger))
    }

    private static func knownCollections(_ database: SharedDatabase, logger: Logger) -> [KnownCollection] {
        do {
            return try database.writeIfOpen { database throws(StoreError) in try database.knownCollections() } ?? []
        } catch {
            logger.warning("cannot read the accounts' collections from the replica: \(error)")
            return []
        }
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
        let scheduler = Scheduler(configuration: running, environment: environment, logger: logger)
        environment.scheduler = scheduler
        environment.metrics = metrics
        environment.storeNames = Set(configuration.stores.map(\.name))
        schedulerEnvironment = environment
        if let recorded = try? database.writeIfOpen({ database throws(StoreError) in try database.syncStates() }) {
            metrics.seed(from: recorded)
        }
        serveMetrics(configuration.global.metricsListen)
        heartbeats = HeartbeatPinger(logger: logger)
        scheduler.onPassFinished = { [weak self, weak scheduler] store, outcome in
            if let scheduler { self?.accountPassFinished(store, outcome, scheduler: scheduler) }
            if let scheduler { self?.countPass(store, outcome, scheduler: scheduler) }
            self?.pingStoreHeartbeat(store, outcome)
            // A store that starts failing shows at once (STATUS=, and `ferry status` through
            // the failures a full or read-only replica could not record); the rest can wait
            // for the next refresh.
            if case .failure(let error) = outcome, error.kind != .cancelled, error.kind != .busy, scheduler?.nextPass(of: store)?.failures == 1 {
                self?.refreshStatus()
            } else {
                self?.refreshStatusSoon()
            }
        }
        scheduler.onPassStartDelay = { [metrics] _, trigger, delay in metrics.passStarted(trigger: trigger, delay: delay) }
        state = .running(scheduler)
        logger.info("ferryd \(FerryVersion.current) ready: \(configuration.stores.count) store(s), database \(database.path)", metadata: MessageID.ready.metadata)
        logWarnings(configuration)
        notifier.ready(status: statusLine(scheduler.snapshot))
        scheduler.start()
        startTimers()
        if database.integrityCheckDeferred { startIntegrityCheck() }
        armTestHang()

        while true {
            if case .stopped(let exitCode) = state { return exitCode }
            _ = RunLoop.current.run(mode: .default, before: .distantFuture)
        }
    }

    // MARK: - Signals

    private func installSignalHandlers() {
        signalWaiter = SignalWaiter([SIGHUP, SIGTERM, SIGINT]) { [weak self] signalNumber in
            RunLoopHandle.main.perform { [weak self] in self?.handle(signal: signalNumber) }
        }
    }

    private func handle(signal signalNumber: Int32) {
        switch (signalNumber, state) {
        case (SIGHUP, .running(let scheduler)):
            reload(scheduler)
        case (SIGTERM, .running(let scheduler)), (SIGINT, .running(let scheduler)):
            stop(scheduler, signalName: signalNumber == SIGTERM ? "SIGTERM" : "SIGINT")
        case (SIGTERM, .stopping), (SIGINT, .stopping):
            // A second signal: stop waiting for passes; SQLite rolls back what is open.
            logger.notice("second stop signal: exiting without waiting")
            finishStopping(drained: false)
        default:
            break
        }
    }

    // MARK: - Accounts

    /// After an account's pass: its collections as the pass left them start, stop or change
    /// in the schedule (a new one syncs at once), and each passes now with the sync-token the
    /// discovery read for it.
    private func accountPassFinished(_ store: String, _ outcome: Result<PassReport, SyncError>, scheduler: Scheduler) {
        guard accountStores.contains(store), case .success(let report) = outcome else { return }
        let before = running
        expandAccounts()
        if running != before { scheduler.apply(running) }
        scheduler.accountDiscovered(store, tokens: report.collectionTokens)
    }

    // MARK: - Reload

    private func reload(_ scheduler: Scheduler) {
        notifier.reloading()
        reloadGeneration += 1
        logger.info("reloading \(configurationPath)", metadata: MessageID.reload.metadata)
        let runtime = configuration.global.runtimeDirectory
        do {
            let loaded = try ConfigurationLoader.load(path: configurationPath, environment: environment)
            if loaded.global.databasePath != configuration.global.databasePath {
                logger.warning("the database path changed to \(loaded.global.databasePath); it takes effect at the next restart, this process keeps \(database.path)")
            }
            if loaded.global.metricsListen != configuration.global.metricsListen { serveMetrics(loaded.global.metricsListen) }
            configuration = loaded
            reloadProblem = nil
            FerryLogging.level.level = loaded.global.logLevel
            logWarnings(loaded)
            schedulerEnvironment?.storeNames = Set(loaded.stores.map(\.name))
            scheduler.apply(running)
            scheduler.resyncAll()
            publishReload(.ok, message: "reloaded: \(loaded.stores.count) store(s)", directory: runtime)
            logger.info("reloaded: \(loaded.stores.count) store(s), resyncing all", metadata: MessageID.reload.metadata)
        } catch {
            let message = "\(error)"
            // STATUS= gets the first problem, short; the journal and `ferry reload` get them all.
            let count = error.problems.count
            let first = error.problems.first.map { "\($0)" } ?? message
            reloadProblem = StoreStatus.shorten(first, to: 120) + (count > 1 ? " (and \(count - 1) more)" : "")
            logger.error("reload failed, keeping the running configuration: \(message)", metadata: MessageID.reloadFailed.metadata)
            publishReload(.error, message: message, directory: runtime)
        }
        notifier.ready(status: statusLine(scheduler.snapshot))
    }

    private func logWarnings(_ configuration: FerryConfiguration) {
        for warning in configuration.warnings {
            logger.warning("configuration: \(warning)")
        }
    }

    private func publishReload(_ outcome: ReloadResult.Outcome, message: String, directory: String) {
        do {
            try ReloadAcknowledgement.publish(generation: reloadGeneration, result: outcome, message: message, directory: directory)
        } catch {
            logger.warning("cannot publish the reload result in \(directory): \(error)")
        }
    }

    // MARK: - Integrity of a large replica

    /// Checks every page of a replica too large to check before READY, on a thread and a
    /// read-only connection of its own; a damaged replica stops the daemon as it would have
    /// refused to start, so nothing more is written into it.
    private func startIntegrityCheck() {
        logger.info("checking the replica's integrity in the background (quick_check of \(database.path))")
        let started = ContinuousClock.now
        database.checkIntegrityBeside { [weak self] failure in
            let box = UncheckedSendableBox(failure)
            RunLoopHandle.main.perform { [weak self] in self?.integrityChecked(box.value, after: .now - started) }
        }
    }

    private func integrityChecked(_ failure: StoreError?, after duration: Duration) {
        guard let failure else {
            logger.info("replica integrity check: ok (\(String(format: "%.1f", duration.seconds)) s); the next in a day at the earliest")
            return
        }
        guard case .running(let scheduler) = state else { return }
        logger.critical("the replica failed its integrity check: \(failure); stopping so nothing more is written into it", metadata: MessageID.replicaDamaged.metadata)
        notifier.status("REPLICA DAMAGED (\(database.path)): \(StoreStatus.shorten(failure.message, to: 120))")
        stop(scheduler, signalName: "replica damaged", exitCode: FerryExitCode.for(failure).rawValue)
    }

    // MARK: - Stop

    private func stop(_ scheduler: Scheduler, signalName: String, exitCode: Int32 = 0) {
        state = .stopping
        notifier.stopping()
        notifier.extendTimeout(.seconds(5))
        logger.info("\(signalName): stopping; cancelling running passes", metadata: MessageID.stopping.metadata)
        timers.forEach { $0.invalidate() }
        heartbeats?.cancel()
        metricsListener?.stop()
        PublishedSchedule.withdraw(directory: configuration.global.runtimeDirectory)
        scheduler.stop(timeout: .milliseconds(1500)) { [weak self] drained in
            self?.finishStopping(drained: drained, exitCode: exitCode)
        }
    }

    private func finishStopping(drained: Bool, exitCode: Int32 = 0) {
        if case .stopped = state { return }
        if !drained {
            logger.warning("passes still running at exit; their open transactions roll back")
        }
        database.close()
        state = .stopped(exitCode: exitCode)
        // Wake the loop in run() so it sees the new state.
        RunLoopHandle.main.stop()
    }

    // MARK: - Status and watchdog

    private func startTimers() {
        let status = Timer(timeInterval: 5, repeats: true) { [weak self] _ in self?.refreshStatus() }
        status.tolerance = 1
        RunLoop.current.add(status, forMode: .default)
        timers.append(status)
        // keep-changes: the change log is pruned a minute after start, then hourly.
        let prune = Timer(fire: Date(timeIntervalSinceNow: 60), interval: 3600, repeats: true) { [weak self] _ in self?.pruneChangeLog() }
        prune.tolerance = 30
        RunLoop.current.add(prune, forMode: .default)
        timers.append(prune)
        // Local writes to push stores are pushed within about a second of their commit.
        let localWrites = Timer(timeInterval: 1, repeats: true) { [weak self] _ in
            self?.pushLocalWrites()
            self?.publishSchedule()
        }
        localWrites.tolerance = 0.2
        RunLoop.current.add(localWrites, forMode: .default)
        timers.append(localWrites)
        if let period = notifier.watchdogPingInterval {
            let watchdog = Timer(timeInterval: period.seconds, repeats: true) { [weak self] _ in self?.watchdogTick() }
            RunLoop.current.add(watchdog, forMode: .default)
            timers.append(watchdog)
            watchdogTick()
        }
    }

    /// Asks for a pass of every push store another program wrote to since the last look.
    private func pushLocalWrites() {
        guard case .running(let scheduler) = state, !pushStores.isEmpty else { return }
        let pushing = pushStores
        do {
            guard let stores = try database.writeIfOpen({ database throws(StoreError) in try database.storesWithLocalWrites(among: pushing) }),
                  let stores, !stores.isEmpty else { return }
            scheduler.passSoon(stores)
        } catch {
            // The next pass of each store pushes anyway; a failing replica shows there.
            logger.warning("looking for local writes failed: \(error)")
        }
    }

    /// Pings while the main loop runs (this timer fires). A pass that makes no progress is the
    /// scheduler's to cancel, and other stores go on; only a pass that ignores its cancellation
    /// for a whole stuck-pass timeout (a thread wedged in a call that never returns) withholds
    /// the ping, because then only a restart frees it.
    private func watchdogTick() {
        guard case .running(let scheduler) = state else { return }
        let wedged = scheduler.snapshot.wedged
        if wedged.isEmpty {
            reportedStuck.removeAll()
            notifier.watchdog()
            return
        }
        for store in wedged where !reportedStuck.contains(store) {
            logger.critical("store \(store): its pass ignored its cancellation for a whole stuck-pass-timeout; withholding the watchdog ping so systemd restarts ferryd", metadata: MessageID.watchdogStuck.metadata.merging(["store": "\(store)"]) { $1 })
            reportedStuck.insert(store)
        }
    }

    /// Deletes change-log entries older than `keep-changes`, off the main thread and in steps
    /// of 50,000, so passes wait for the write lock briefly at most.
    private func pruneChangeLog() {
        let retention = configuration.global.changeRetention
        let database = self.database
        let logger = self.logger
        DispatchQueue.global().async {
            let cutoff = Date().addingTimeInterval(-retention.seconds)
            var total = 0
            do {
                while true {
                    guard let deleted = try database.writeIfOpen({ try $0.pruneChangeLog(keepingNewerThan: cutoff, keepingAtLeast: 0, limit: 50_000) }) else { return }
                    total += deleted
                    if deleted < 50_000 { break }
                }
            } catch {
                logger.warning("pruning the change log failed: \(error)")
                return
            }
            if total > 0 { logger.info("pruned \(total) change-log entries older than keep-changes") }
        }
    }

    /// The least time between two refreshes that a pass's end asks for. A refresh reads every
    /// store (STATUS=, the schedule for `ferry status`, heartbeats), and 5,000 stores end about
    /// 80 passes a second: refreshing after each would make every pass cost as many stores.
    /// STATUS= counts in whole seconds anyway.
    static let statusRefreshGap = Duration.seconds(1)

    /// Refreshes now, or once ``statusRefreshGap`` has passed since the last refresh.
    private func refreshStatusSoon() {
        guard !statusRefreshPending else { return }
        let now = ContinuousClock.now
        let due = statusRefreshedAt + Self.statusRefreshGap
        guard due > now else { return refreshStatus() }
        statusRefreshPending = true
        let timer = statusRefreshTimer ?? movableTimer { [weak self] _ in
            self?.statusRefreshPending = false
            self?.refreshStatus()
        }
        statusRefreshTimer = timer
        timer.fireDate = Date(timeIntervalSinceNow: (due - now).seconds)
    }

    /// A repeating timer with a year's interval, on this run loop, that its user moves with
    /// `fireDate`. A one-shot timer made per use is never freed by swift-corelibs-foundation:
    /// with them ferryd was seen refreshing 43 times a second after a few minutes with 5,000
    /// stores (once a second with one moved timer).
    private func movableTimer(tolerance: TimeInterval = 0, _ fire: @escaping @Sendable (Timer) -> Void) -> Timer {
        let timer = Timer(fire: .distantFuture, interval: 365 * 86_400, repeats: true, block: fire)
        timer.tolerance = tolerance
        RunLoop.current.add(timer, forMode: .default)
        timers.append(timer)
        return timer
    }

    private func refreshStatus() {
        guard case .running(let scheduler) = state else { return }
        statusRefreshedAt = .now
        let snapshot = scheduler.snapshot
        let line = statusLine(snapshot)
        if line != lastStatus {
            notifier.status(line)
            lastStatus = line
        }
        publishUnrecordedFailures(snapshot.unrecordedFailures)
        metrics.refresh(.init(running: snapshot.running.count, waiting: snapshot.waiting))
        publishSchedule()
        if let heartbeat = configuration.global.heartbeat {
            // From the main loop (each refresh, and a timer set for when the next ping is due):
            // a main loop that stops turning stops the pings, which is what a dead-man's switch
            // is for.
            heartbeats?.report(.daemon, healthy: snapshot.failing.isEmpty && snapshot.incomplete.isEmpty, to: heartbeat)
            scheduleHeartbeat(heartbeat)
        }
    }

    /// Sets the heartbeat timer for when the daemon's next ping is due, so pings keep the
    /// interval instead of waiting for the next 5 s status tick (up to 5 s late each).
    private func scheduleHeartbeat(_ heartbeat: HeartbeatConfiguration) {
        let due = heartbeats?.nextPing(of: .daemon, interval: heartbeat.interval) ?? .now + heartbeat.interval
        let timer = heartbeatTimer ?? movableTimer(tolerance: 0.05) { [weak self] _ in self?.refreshStatus() }
        heartbeatTimer = timer
        timer.fireDate = Date(timeIntervalSinceNow: max(0.05, (due - .now).seconds))
    }

    private static func pushStores(_ configuration: FerryConfiguration) -> Set<String> {
        Set(configuration.stores.filter(\.writeBack.push).map(\.name))
    }

    private static func accountStores(_ configuration: FerryConfiguration) -> Set<String> {
        Set(configuration.stores.filter(\.kind.isAccount).map(\.name))
    }

    private static func storeHeartbeats(_ configuration: FerryConfiguration) -> [String: HeartbeatConfiguration] {
        Dictionary(uniqueKeysWithValues: configuration.stores.compactMap { store in store.heartbeat.map { (store.name, $0) } })
    }

    /// A store's own heartbeat: healthy when the pass succeeded and left the replica whole.
    private func pingStoreHeartbeat(_ store: String, _ outcome: Result<PassReport, SyncError>) {
        guard let heartbeat = storeHeartbeats[store] else { return }
        switch outcome {
        case .success(let report): heartbeats?.report(.store(store), healthy: report.isComplete, to: heartbeat)
        case .failure(let error) where error.kind == .cancelled || error.kind == .busy: break
        case .failure: heartbeats?.report(.store(store), healthy: false, to: heartbeat)
        }
    }

    /// Keeps `ferry status` truthful while the replica cannot take the failures it should
    /// show; written only when the set changes.
    private func publishUnrecordedFailures(_ failures: [String: UnrecordedFailures.Failure]) {
        guard failures != publishedUnrecorded else { return }
        let directory = configuration.global.runtimeDirectory
        do {
            try UnrecordedFailures(database: database.path, stores: failures).publish(directory: directory)
            for name in failures.keys.sorted() where publishedUnrecorded[name] == nil {
                logger.notice("store \(name): the replica could not record this failure; `ferry status` reads it from \(directory)/\(UnrecordedFailures.fileName)",
                              metadata: ["store": "\(name)"])
            }
            publishedUnrecorded = failures
        } catch {
            logger.warning("cannot publish failures the replica could not record in \(directory): \(error); `ferry status` may show them as ok")
        }
    }

    /// One line: a replica that cannot be written first; then each store and how it is (ok,
    /// FAILING with why, never synced, syncing its first pass), or past eight stores how many
    /// are in each state; running passes; the last pass; records; a refused reload.
    func statusLine(_ snapshot: Scheduler.Snapshot) -> String {
        let running = Set(snapshot.running)
        let failing = Set(snapshot.failing)
        let never = Set(snapshot.neverSynced)
        func state(_ name: String) -> String {
            if failing.contains(name) { return "\(name) FAILING" + (snapshot.causes[name].map { " (\($0))" } ?? "") }
            if never.contains(name) { return running.contains(name) ? "\(name) first sync running" : "\(name) never synced" }
            if let gaps = snapshot.incomplete[name] { return "\(name) INCOMPLETE (\(StoreStatus.shorten(gaps, to: 80)))" }
            return "\(name) ok"
        }
        var parts: [String]
        if snapshot.stores == 0 {
            parts = ["no stores"]
        } else if !snapshot.names.isEmpty {
            parts = [snapshot.names.map(state).joined(separator: ", ")]
        } else {
            let incomplete = snapshot.incomplete.keys.sorted()
            var summary = "\(snapshot.stores) stores: \(snapshot.stores - failing.count - never.count - incomplete.count) ok"
            if !failing.isEmpty { summary += ", \(failing.count) FAILING (\(snapshot.failing.prefix(8).map(state).joined(separator: ", "))\(failing.count > 8 ? ", ..." : ""))" }
            if !incomplete.isEmpty { summary += ", \(incomplete.count) INCOMPLETE (\(incomplete.prefix(8).joined(separator: ", "))\(incomplete.count > 8 ? ", ..." : ""))" }
            if !never.isEmpty { summary += ", \(never.count) not synced yet" }
            parts = [summary]
        }
        if let problem = snapshot.replicaProblem { parts.insert("\(problem.uppercased()) (\(database.path))", at: 0) }
        if !snapshot.running.isEmpty {
            parts.append("syncing \(snapshot.running.prefix(8).joined(separator: ", "))" + (snapshot.running.count > 8 ? " and \(snapshot.running.count - 8) more" : ""))
        }
        if let last = snapshot.lastPassFinished {
            parts.append("last pass \(Int((ContinuousClock.now - last).seconds)) s ago")
        }
        parts.append("\(snapshot.records) records")
        if let reloadProblem { parts.append("reload failed: \(reloadProblem)") }
        if let metricsProblem { parts.append("METRICS NOT SERVED: \(metricsProblem)") }
        return parts.joined(separator: "; ")
    }

    // MARK: - Metrics

    /// Serves metrics where configured, or on the socket systemd passed; replaces what was
    /// served before (a reload that changed `metrics-listen`). A port that cannot be bound
    /// stops only the metrics: syncing goes on, and STATUS= and the journal say why.
    private func serveMetrics(_ endpoint: MetricsEndpoint?) {
        metricsListener?.stop()
        metricsListener = nil
        metricsProblem = nil
        let metrics = self.metrics
        let render: @Sendable () -> String = { metrics.render() }
        do {
            if let endpoint {
                metricsListener = try MetricsListener(endpoint: endpoint, render: render)
            } else if let socket = MetricsListener.activatedSocket(environment: environment) {
                metricsListener = MetricsListener(inheritedSocket: socket, render: render)
            }
        } catch {
            metricsProblem = error.description
            logger.error("\(error); syncing goes on without metrics", metadata: MessageID.metricsUnavailable.metadata)
            return
        }
        guard let metricsListener else { return }
        metricsListener.start()
        logger.info("serving Prometheus metrics on \(metricsListener.boundTo) at /metrics")
    }

    /// Publishes the schedule for `ferry status` when it changed, at most once a second (the
    /// one-second timer catches what a pass's end left unpublished).
    private func publishSchedule() {
        guard case .running(let scheduler) = state, ContinuousClock.now - schedulePublishedAt >= .seconds(1) else { return }
        // Building every store's entry costs milliseconds at 5,000 stores: skipped while the
        // schedule stands still, except once a minute (a wall clock set since then moves
        // every next pass as `ferry status` shows it).
        guard scheduler.revision != publishedRevision || ContinuousClock.now - schedulePublishedAt >= .seconds(60) else { return }
        publishedRevision = scheduler.revision
        let entries = scheduler.publishedEntries()
        schedulePublishedAt = .now
        guard entries != publishedSchedule else { return }
        let directory = configuration.global.runtimeDirectory
        publishedSchedule = entries
        do {
            try PublishedSchedule(database: database.path, stores: entries).publish(directory: directory)
            schedulePublishFailed = false
        } catch {
            // Said once until it works again; syncing goes on either way.
            if !schedulePublishFailed { logger.warning("cannot publish the schedule in \(directory): \(error); `ferry status` will not show next passes") }
            schedulePublishFailed = true
        }
    }

    /// A finished pass, counted with the schedule it leaves the store on.
    private func countPass(_ store: String, _ outcome: Result<PassReport, SyncError>, scheduler: Scheduler) {
        var schedule = DaemonMetrics.Schedule(nextPass: nil, consecutiveFailures: 0)
        if let next = scheduler.nextPass(of: store) {
            schedule = .init(nextPass: Date().addingTimeInterval((next.at - ContinuousClock.now).seconds), consecutiveFailures: next.failures)
        }
        metrics.passFinished(store, outcome: outcome, schedule: schedule)
    }

    // MARK: - Test switch

    /// `FERRY_TEST_MODE=1 FERRY_TEST_HANG_AFTER_READY=<s>` wedges the main loop, so the system
    /// test can prove that a wedged daemon is killed by the watchdog. Ignored otherwise.
    private func armTestHang() {
        guard environment["FERRY_TEST_MODE"] == "1", let text = environment["FERRY_TEST_HANG_AFTER_READY"],
              let seconds = Double(text) else { return }
        logger.warning("test mode: the main loop will hang \(seconds) s after ready")
        let timer = Timer(timeInterval: seconds, repeats: false) { _ in
            while true { sleep(3600) }
        }
        RunLoop.current.add(timer, forMode: .default)
    }
}
