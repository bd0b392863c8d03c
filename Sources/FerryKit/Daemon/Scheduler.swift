import Foundation
import Logging

/// Decides when each store syncs, and runs its passes through a ``SchedulerEnvironment``.
///
/// Confined to one thread (ferryd's main thread; a test's): every entry point is called there
/// and every pass completion comes back there. Nothing polls: the scheduler asks its
/// environment to wake it when the earliest store is due (or a running pass would become
/// stuck), and a finishing pass dispatches what is waiting.
///
/// Due stores start in ``ReadyKey`` order, at most twice `max-concurrent-passes` handed to the
/// environment at once (a corelibs `OperationQueue` rescans every waiting operation on each
/// finish, so the rest wait here). Both queues are heaps with lazy deletion (``DueQueue``): a
/// pass costs O(log stores), not a sort of every store.
///
/// Failures back off (``Backoff``), never sooner than a server's Retry-After, which also holds
/// across reloads and SIGHUP resyncs. A reload keeps the history of stores that still name the
/// same remote; a pass a reload cancels is not a failure. A pass that makes no progress for
/// `stuck-pass-timeout` is cancelled and counted as a failure; one that does not even end then
/// is reported in ``Snapshot/wedged``, for the daemon to withhold its watchdog.
public final class Scheduler {
    private let environment: any SchedulerEnvironment
    private let logger: Logger
    private var schedules: [String: StoreSchedule] = [:]
    /// Idle stores by the instant they may start.
    private var waiting = DueQueue<ContinuousClock.Instant>()
    /// Stores that may start, in start order.
    private var ready = DueQueue<ReadyKey>()
    /// Passes handed to the environment and not yet completed.
    private var inFlight = 0
    /// Stores whose pass is running (`running != nil`), so what concerns running passes costs
    /// what runs, not every store configured.
    private var runningStores: Set<String> = []
    private var backoff: Backoff
    private var stuckPassTimeout: Duration
    private var passCounter = 0
    /// Bumped whenever any store's place in the schedule may have changed (queued, started,
    /// finished, removed), so a reader of ``publishedEntries(now:)`` can skip rebuilding every
    /// store's entry while nothing happens.
    public private(set) var revision = 0
    private var life = Life.running
    /// What the environment found wrong with the replica after the last database failure,
    /// until a pass succeeds again.
    private var replicaProblem: String?
    /// Whether the scheduler still starts passes.
    private enum Life {
        case running
        /// Every pass was cancelled; `completion` runs when the last one ends, or at `deadline`.
        case stopping(deadline: ContinuousClock.Instant, completion: (_ drained: Bool) -> Void)
        case stopped
    }

    /// Called after every pass (the daemon refreshes STATUS).
    public var onPassFinished: ((String, Result<PassReport, SyncError>) -> Void)?
    /// Called as each pass that ran ends, with how long after it was due it began running
    /// (metrics): the wait for the daemon and for a free slot.
    public var onPassStartDelay: ((String, PassTrigger, Duration) -> Void)?

    /// A scheduler with every store of `configuration` due now. Nothing runs until ``start()``.
    /// How soon a store another process was syncing is tried again (or its interval, if
    /// shorter).
    static let busyRetry: Duration = .seconds(5)

    public init(configuration: FerryConfiguration, environment: any SchedulerEnvironment, logger: Logger) {
        self.environment = environment
        self.logger = logger
        self.backoff = configuration.global.backoff
        self.stuckPassTimeout = configuration.global.stuckPassTimeout
        environment.maxConcurrentPasses = configuration.global.maxConcurrentPasses
        let now = environment.now
        for store in configuration.stores {
            schedules[store.name] = StoreSchedule(configuration: store, dueAt: now, trigger: .onDemand)
            enqueue(store.name)
        }
    }

    /// Syncs every store now, then on its interval.
    public func start() {
        dispatch()
    }

    /// What the environment calls when the wake-up it was asked for comes.
    public func tick() {
        let now = environment.now
        switch life {
        case .running:
            cancelStuckPasses(now: now)
            dispatch()
        case .stopping(let deadline, _) where now >= deadline:
            finishStopping(drained: false)
        case .stopping, .stopped:
            break
        }
    }

    // MARK: - Reload and resync

    /// Applies a reloaded configuration. Added stores sync now; removed ones are cancelled and
    /// forgotten (their rows stay: dropping a table is the admin's decision, not a reload's);
    /// a store that now names another remote starts afresh; a store only synced differently
    /// keeps its failures and Retry-After. Only real changes are logged.
    public func apply(_ configuration: FerryConfiguration) {
        environment.maxConcurrentPasses = configuration.global.maxConcurrentPasses
        stuckPassTimeout = configuration.global.stuckPassTimeout
        backoff = configuration.global.backoff
        let now = environment.now
        let incoming = Dictionary(configuration.stores.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        for name in schedules.keys.sorted() where incoming[name] == nil {
            schedules[name]?.running?.cancel()
            schedules[name] = nil
            runningStores.remove(name)
            revision += 1
            logger.notice("store \(name): removed from the configuration; its table stays in the database", metadata: ["store": "\(name)"])
        }
        for store in configuration.stores {
            guard let schedule = schedules[store.name] else {
                schedules[store.name] = StoreSchedule(configuration: store, dueAt: now, trigger: .onDemand)
                enqueue(store.name)
                logger.notice("store \(store.name): added", metadata: ["store": "\(store.name)"])
                continue
            }
            guard schedule.configuration != store else { continue }
            if StoreSchedule.isSameRemote(schedule.configuration, store) {
                logger.notice("store \(store.name): configuration changed", metadata: ["store": "\(store.name)"])
            } else {
                // Another remote: what the old one did (failures, Retry-After, a sweep) says
                // nothing about it. A running pass of the old one stops.
                schedule.running?.cancel()
                schedule.consecutiveFailures = 0
                schedule.lastError = nil
                schedule.notBefore = nil
                schedule.lastReconcile = nil
                schedule.sweepOwed = true
                logger.notice("store \(store.name): now syncs another remote (url, kind or options changed); starting afresh",
                              metadata: ["store": "\(store.name)"])
            }
            schedule.configuration = store
            revision += 1
        }
        dispatch()
    }

    /// Makes every store due now (SIGHUP, a reload), except that none starts before its
    /// remote's Retry-After; a store already syncing runs again once its pass ends.
    public func resyncAll() {
        for name in schedules.keys {
            guard let schedule = schedules[name] else { continue }
            if schedule.running != nil {
                schedule.rerunRequested = true
                schedule.rerunTrigger = .onDemand
            } else {
                schedule.nextDue = environment.now
                schedule.trigger = .onDemand
                enqueue(name)
            }
        }
        dispatch()
    }

    /// Runs a pass of each of `names` soon (local writes to push): now when idle, again after
    /// the running pass otherwise. A store in backoff keeps its schedule: its next pass pushes
    /// first anyway, and a remote that fails is not asked more often because of local writes.
    public func passSoon(_ names: Set<String>) {
        for name in names.sorted() {
            guard let schedule = schedules[name], schedule.consecutiveFailures == 0 else { continue }
            if schedule.running != nil {
                schedule.rerunRequested = true
                schedule.rerunTrigger = .onDemand
            } else if schedule.nextDue > environment.now {
                schedule.nextDue = environment.now
                enqueue(name)
            }
        }
        dispatch()
    }

    /// What a request for a pass of one store came to (``notified(_:)``, ``requested(_:)``).
    public enum PassAsk: String, Sendable, Equatable {
        /// The store is now due (it starts as soon as a slot is free).
        case due
        /// Already due, or already asked to run again after its running pass: one pass running
        /// and one waiting is the most any number of asks makes.
        case coalesced
        /// A pass runs; another follows it at once.
        case queuedAfterRunning = "queued"
        /// The store is backing off after failures (or its remote's Retry-After holds): its
        /// next attempt keeps its time, since asking a failing remote sooner helps nobody.
        case backingOff = "backing-off"
        /// No such store.
        case unknown
    }

    /// A verified change notification for `name`: its next pass now, coalesced.
    @discardableResult
    public func notified(_ name: String) -> PassAsk {
        ask(name, trigger: .notified)
    }

    /// A person or script asked for a pass of `name` (`ferry sync --now`): as a notification,
    /// but on-demand (it outranks scheduled and notified passes, and revalidates), and a store
    /// backing off is tried now, though never before its remote's Retry-After.
    @discardableResult
    public func requested(_ name: String) -> PassAsk {
        ask(name, trigger: .onDemand)
    }

    private func ask(_ name: String, trigger: PassTrigger) -> PassAsk {
        guard let schedule = schedules[name] else { return .unknown }
        let now = environment.now
        let outcome: PassAsk
        if schedule.running != nil {
            outcome = schedule.rerunRequested && schedule.rerunTrigger >= trigger ? .coalesced : .queuedAfterRunning
            schedule.rerunTrigger = schedule.rerunRequested ? max(schedule.rerunTrigger, trigger) : trigger
            schedule.rerunRequested = true
        } else if trigger != .onDemand, schedule.consecutiveFailures > 0 || (schedule.notBefore.map { $0 > now } ?? false) {
            // A person asking is let through (not before a Retry-After, which ``StoreSchedule/startsAt`` keeps).
            return .backingOff
        } else if schedule.nextDue > now {
            schedule.nextDue = now
            schedule.trigger = trigger
            enqueue(name)
            outcome = .due
        } else if schedule.trigger < trigger {
            // Due and waiting for a slot: it keeps its place, with the higher reason.
            schedule.trigger = trigger
            enqueue(name)
            outcome = .coalesced
        } else {
            outcome = .coalesced
        }
        dispatch()
        return outcome
    }

    /// After `account`'s discovery succeeded: each of its collections passes now, with the
    /// sync-token discovery read for it, if any (a collection whose token is the stored one
    /// then makes no request, so a quiet account costs discovery's requests per interval). A
    /// collection running, backing off or waiting for a Retry-After keeps its schedule.
    public func accountDiscovered(_ account: String, tokens: [String: String]) {
        for (name, schedule) in schedules where schedule.configuration.account == account {
            guard schedule.running == nil, schedule.consecutiveFailures == 0 else { continue }
            schedule.discoveredToken = tokens[name]
            if schedule.nextDue > environment.now {
                schedule.nextDue = environment.now
                enqueue(name)
            }
        }
        dispatch()
    }

    // MARK: - Stopping

    /// Cancels every pass; `completion` runs on the scheduler's thread once all have ended
    /// (each rolls back its open transaction) or at `timeout`, whichever is first.
    public func stop(timeout: Duration, completion: @escaping (_ drained: Bool) -> Void) {
        guard case .running = life else { preconditionFailure("Scheduler.stop called twice") }
        let deadline = environment.now + timeout
        life = .stopping(deadline: deadline, completion: completion)
        for schedule in schedules.values { schedule.running?.cancel() }
        if inFlight == 0 {
            finishStopping(drained: true)
        } else {
            environment.wake(at: deadline)
        }
    }

    private func finishStopping(drained: Bool) {
        guard case .stopping(_, let completion) = life else { return }
        life = .stopped
        environment.wake(at: nil)
        completion(drained)
    }

    // MARK: - Dispatching

    /// Pushes `name` into the waiting queue under a new generation (older entries go stale).
    private func enqueue(_ name: String) {
        guard let schedule = schedules[name] else { return }
        schedule.generation += 1
        revision += 1
        guard schedule.running == nil else { return }
        waiting.push(schedule.startsAt, store: name, generation: schedule.generation)
    }

    private func isCurrent<Key>(_ entry: DueQueue<Key>.Entry) -> Bool {
        guard let schedule = schedules[entry.store] else { return false }
        return schedule.generation == entry.generation && schedule.running == nil
    }

    private var capacity: Int { environment.maxConcurrentPasses * 2 }

    /// Moves due stores to the ready queue, starts as many as there is room for, and asks to
    /// be woken for the next one.
    private func dispatch() {
        guard case .running = life else { return }
        let now = environment.now
        while let top = waiting.peek(isCurrent: isCurrent), top.key <= now {
            _ = waiting.pop(isCurrent: isCurrent)
            guard let schedule = schedules[top.store] else { continue }
            ready.push(ReadyKey(trigger: schedule.trigger, priority: schedule.configuration.priority, due: schedule.nextDue, name: top.store),
                       store: top.store, generation: top.generation)
        }
        while inFlight < capacity, let entry = ready.pop(isCurrent: isCurrent) {
            startPass(entry.store, now: now)
        }
        waiting.compact(currentCount: schedules.count, isCurrent: isCurrent)
        ready.compact(currentCount: schedules.count, isCurrent: isCurrent)
        armWake(now: now)
    }

    /// The next instant anything can happen: a store becoming due (when there is room to start
    /// it; otherwise a finishing pass dispatches), or a running pass becoming stuck.
    private func armWake(now: ContinuousClock.Instant) {
        var next: ContinuousClock.Instant?
        if inFlight < capacity, let top = waiting.peek(isCurrent: isCurrent) { next = top.key }
        for name in runningStores {
            guard let schedule = schedules[name], let running = schedule.running, running.isRunning else { continue }
            let limit = (schedule.cancelledAsStuck ?? running.lastAdvance) + stuckPassTimeout
            next = min(next ?? limit, limit)
        }
        environment.wake(at: next)
    }

    private func startPass(_ name: String, now: ContinuousClock.Instant) {
        guard let schedule = schedules[name] else { return }
        passCounter += 1
        let number = passCounter
        let reconcile = schedule.needsReconciliation(now: now)
        var request = PassRequest(store: schedule.configuration, trigger: schedule.trigger, reconcile: reconcile, number: number,
                                  sweepInterval: schedule.sweepOwed ? nil : schedule.configuration.reconcileInterval)
        // A token is news for the pass right after the discovery that read it, not later.
        request.currentToken = schedule.discoveredToken
        schedule.discoveredToken = nil
        schedule.runningNumber = number
        schedule.rerunRequested = false
        schedule.cancelledAsStuck = nil
        schedule.generation += 1
        revision += 1
        inFlight += 1
        schedule.runningDue = (schedule.startsAt, schedule.trigger)
        // Marked running before starting, so a completion can never find the store idle.
        runningStores.insert(name)
        let pass = environment.startPass(request) { [weak self] result in
            self?.passFinished(name, number: number, result: result)
        }
        schedules[name]?.running = pass
    }

    private func passFinished(_ name: String, number: Int, result: Result<PassReport, SyncError>) {
        inFlight -= 1
        defer {
            if case .stopping = life, inFlight == 0 { finishStopping(drained: true) }
        }
        // A pass of a store removed, or restarted by a reload, since it began.
        guard let schedule = schedules[name], schedule.runningNumber == number else {
            dispatch()
            return
        }
        let now = environment.now
        if let due = schedule.runningDue, let started = schedule.running?.startedAt {
            onPassStartDelay?(name, due.trigger, started - due.instant)
        }
        schedule.runningDue = nil
        schedule.running = nil
        runningStores.remove(name)
        schedule.runningNumber = nil
        schedule.lastFinished = now
        var outcome = result
        if case .failure(let error) = result, error.kind == .cancelled, schedule.cancelledAsStuck != nil {
            var stuck = SyncError(.transport(.stalled), store: name,
                                  message: "no progress for \(ConfigurationUnits.format(stuckPassTimeout)) (stuck-pass-timeout); the pass was cancelled")
            // A cancelled pass records nothing in the replica; this failure is the daemon's own.
            stuck.unrecordedAt = Date()
            outcome = .failure(stuck)
        }
        schedule.cancelledAsStuck = nil
        switch outcome {
        case .success(let report):
            schedule.recordCount = report.recordCount
            schedule.gaps = report.gaps
            schedule.consecutiveFailures = 0
            schedule.lastError = nil
            schedule.notBefore = nil
            replicaProblem = nil
            if case .swept = report.reconciliation {
                schedule.lastReconcile = now
                schedule.sweepOwed = false
            }
            schedule.nextDue = now + schedule.configuration.interval + schedule.configuration.jitter * environment.randomUnit()
            if let account = schedule.configuration.account, schedules[account] != nil {
                // The account's next discovery brings the collection's next pass, with its
                // token; this is only the fallback should discovery not come.
                schedule.nextDue = schedule.nextDue + schedule.configuration.interval
            }
            schedule.trigger = .scheduled
        case .failure(let error) where error.kind == .cancelled:
            // Cancelled by a reload, a stop or a person: not the store's failure. Run again soon.
            schedule.nextDue = now
            schedule.trigger = .onDemand
        case .failure(let error) where error.kind == .busy:
            // Another process (a person's `ferry sync`) is syncing the store: not the store's
            // failure either. Its pass brings the store up to date; this one looks again soon.
            let retry = min(schedule.configuration.interval, Self.busyRetry)
            schedule.nextDue = now + retry
            schedule.trigger = .scheduled
            logger.info("store \(name): \(error.message); trying again in \(ConfigurationUnits.format(retry))", metadata: ["store": "\(name)"])
        case .failure(var error):
            if case .store = error.kind {
                noteReplicaProblem(store: name)
                // On a volume that refuses writes, recording the failure may not throw and still
                // not reach other readers (seen on ext4 remounted read-only): the daemon
                // publishes it as well.
                if replicaProblem != nil, error.unrecordedAt == nil { error.unrecordedAt = Date() }
            }
            schedule.consecutiveFailures += 1
            schedule.lastError = error
            let delay = backoff.delay(afterFailures: schedule.consecutiveFailures, error: error, unit: environment.randomUnit())
            schedule.nextDue = now + delay
            schedule.notBefore = error.retryAfter.map { now + $0 }
            schedule.trigger = .scheduled
            logger.warning("store \(name): backing off \(String(format: "%.1f", delay.seconds)) s after \(schedule.consecutiveFailures) failure(s)", metadata: [
                "store": "\(name)",
                MessageID.metadataKey: "\(MessageID.backoff.rawValue)",
                "failures": "\(schedule.consecutiveFailures)",
                "delay_ms": "\(Int(delay.seconds * 1000))",
            ])
        }
        if schedule.rerunRequested {
            schedule.rerunRequested = false
            schedule.nextDue = min(schedule.nextDue, now)
            schedule.trigger = schedule.rerunTrigger
            schedule.rerunTrigger = .onDemand
        }
        enqueue(name)
        onPassFinished?(name, outcome)
        dispatch()
    }

    /// Cancels passes that made no progress for the stuck-pass timeout; the cancellation then
    /// counts as the store's failure, and other stores go on.
    private func cancelStuckPasses(now: ContinuousClock.Instant) {
        for name in runningStores.sorted() {
            guard let schedule = schedules[name], let running = schedule.running, running.isRunning, schedule.cancelledAsStuck == nil,
                  now - running.lastAdvance >= stuckPassTimeout else { continue }
            logger.error("store \(name): pass made no progress for \(ConfigurationUnits.format(stuckPassTimeout)) (stuck-pass-timeout); cancelling it", metadata: [
                "store": "\(name)",
                MessageID.metadataKey: "\(MessageID.watchdogStuck.rawValue)",
            ])
            schedules[name]?.cancelledAsStuck = now
            running.cancel()
        }
    }

    /// A pass failed in the database: ask what the file system says, and tell the journal once.
    private func noteReplicaProblem(store name: String) {
        guard let problem = environment.diagnoseReplica() else { return }
        if problem != replicaProblem {
            logger.error("\(problem); passes fail until it takes writes again", metadata: [
                "store": "\(name)",
                MessageID.metadataKey: "\(MessageID.replicaUnwritable.rawValue)",
            ])
        }
        replicaProblem = problem
    }

    // MARK: - Snapshot

    /// What the daemon reads for STATUS= and its watchdog.
    public struct Snapshot: Sendable, Equatable {
        public var stores = 0
        /// Every store's name, sorted, when there are at most ``Snapshot/listedStores``.
        public var names: [String] = []
        public var failing: [String] = []
        /// Why each failing store failed, in a few words ("HTTP 503", "replica disk is full").
        public var causes: [String: String] = [:]
        /// Stores whose last pass finished with the replica knowingly different from the
        /// remote, and why.
        public var incomplete: [String: String] = [:]
        /// Stores that have never finished a pass (and are not failing).
        public var neverSynced: [String] = []
        public var running: [String] = []
        /// Stores due that wait for a free slot.
        public var waiting = 0
        /// Passes cancelled as stuck that have not ended a whole stuck-pass timeout later.
        public var wedged: [String] = []
        public var lastPassFinished: ContinuousClock.Instant?
        public var records = 0
        /// The replica's file system is read-only or full (from the last database failure,
        /// until a pass succeeds again).
        public var replicaProblem: String?
        /// Failing stores whose failure the replica does not hold (``UnrecordedFailures``).
        public var unrecordedFailures: [String: UnrecordedFailures.Failure] = [:]

        /// Up to this many stores, STATUS= names each one; beyond it, it counts them.
        public static let listedStores = 8
    }

    public var snapshot: Snapshot {
        let now = environment.now
        var snapshot = Snapshot()
        snapshot.stores = schedules.count
        if schedules.count <= Snapshot.listedStores { snapshot.names = schedules.keys.sorted() }
        for (name, schedule) in schedules {
            if schedule.isFailing {
                snapshot.failing.append(name)
                if let error = schedule.lastError {
                    snapshot.causes[name] = cause(of: error)
                    if let at = error.unrecordedAt {
                        // "disk I/O error" alone would not tell `ferry status` readers why.
                        let problem = if case .store = error.kind, let replicaProblem { "\(replicaProblem): " } else { "" }
                        snapshot.unrecordedFailures[name] = .init(at: at, message: problem + error.description)
                    }
                }
            } else if schedule.recordCount == nil {
                snapshot.neverSynced.append(name)
            } else if let gaps = ReplicaGap.summary(schedule.gaps) {
                snapshot.incomplete[name] = gaps
            }
            if schedule.running != nil {
                snapshot.running.append(name)
            } else if schedule.startsAt <= now {
                snapshot.waiting += 1
            }
            if let cancelled = schedule.cancelledAsStuck, now - cancelled >= stuckPassTimeout { snapshot.wedged.append(name) }
            if let finished = schedule.lastFinished, finished > (snapshot.lastPassFinished ?? finished - .seconds(1)) {
                snapshot.lastPassFinished = finished
            }
            snapshot.records += schedule.recordCount ?? 0
        }
        snapshot.failing.sort()
        snapshot.neverSynced.sort()
        snapshot.running.sort()
        snapshot.wedged.sort()
        snapshot.replicaProblem = replicaProblem
        return snapshot
    }

    /// A failure in a few words, for STATUS= and `ferry status`. SQLite may say only "disk I/O
    /// error" where the volume probe knows better.
    private func cause(of error: SyncError) -> String {
        if case .store = error.kind { replicaProblem ?? error.kind.statusCause } else { error.kind.statusCause }
    }

    /// Every store's place in the schedule, for `ferry status` (``PublishedSchedule``).
    public func publishedEntries(now date: Date = Date()) -> [String: PublishedSchedule.Entry] {
        let now = environment.now
        var entries: [String: PublishedSchedule.Entry] = [:]
        entries.reserveCapacity(schedules.count)
        for (name, schedule) in schedules {
            let running = schedule.running != nil
            entries[name] = PublishedSchedule.Entry(
                // Whole seconds: the same schedule publishes the same file.
                nextPass: running ? nil : Date(timeIntervalSince1970: (date.timeIntervalSince1970 + max(0, (schedule.startsAt - now).seconds)).rounded(.up)),
                running: running, failures: schedule.consecutiveFailures,
                cause: schedule.isFailing ? schedule.lastError.map(cause(of:)) : nil)
        }
        return entries
    }

    /// Whether a pass of `store` runs now.
    public func isRunning(_ store: String) -> Bool {
        schedules[store]?.running != nil
    }

    /// When `store` is next due and why, for tests and status (nil: unknown store).
    public func nextPass(of store: String) -> (at: ContinuousClock.Instant, trigger: PassTrigger, failures: Int)? {
        schedules[store].map { ($0.startsAt, $0.trigger, $0.consecutiveFailures) }
    }
}
