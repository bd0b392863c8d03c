import Foundation
import Logging

/// Decides when each store syncs and runs its passes, on the run loop of the thread that
/// created it (the daemon's main thread).
///
/// One timer, re-armed for the earliest due store, so an idle daemon sleeps in the kernel.
/// Passes run as ``SyncPassOperation``s on one queue capped at `max-concurrent-passes`; the
/// scheduler keeps what is waiting in its own list and hands the queue at most that many more,
/// because a corelibs `OperationQueue` rescans every waiting operation on each finish.
///
/// Confined to that thread: every entry point asserts it, which is what makes the
/// `@unchecked Sendable` (needed to post back to it from completion blocks and timers) sound.
public final class Scheduler: @unchecked Sendable {
    /// What the daemon reads for STATUS=, the watchdog and `ferry status`.
    public struct Snapshot: Sendable {
        public var stores: Int
        /// Every configured store, sorted.
        public var names: [String]
        public var failing: [String]
        public var running: [String]
        public var lastPassFinished: ContinuousClock.Instant?
        public var records: Int
        /// Running passes that made no progress for longer than the stuck-pass timeout.
        public var stuck: [String]
        /// Why each failing store failed, in a few words ("HTTP 503", "replica disk is full").
        public var causes: [String: String] = [:]
        /// The replica's file system is read-only or full (from the last database failure,
        /// until a pass succeeds again).
        public var replicaProblem: String?
    }

    private var schedules: [String: StoreSchedule] = [:]
    private var database: SharedDatabase
    private var stuckPassTimeout: Duration
    private let queue = OperationQueue()
    private let owner: RunLoopHandle
    private let logger: Logger
    private var backoff: Backoff
    private var timer: Timer?
    private var passCounter = 0
    private var stopping = false
    /// What ``ReplicaVolume`` found after the last pass that failed in the database.
    private var replicaProblem: String?
    /// Called on the owner's loop after every pass (the daemon refreshes STATUS).
    public var onPassFinished: ((Result<PassReport, SyncError>) -> Void)?

    /// Creates a scheduler on the calling thread's run loop. Nothing runs until ``start()``.
    public init(configuration: FerryConfiguration, database: SharedDatabase, logger: Logger) {
        self.database = database
        self.logger = logger
        self.backoff = configuration.global.backoff
        self.owner = RunLoopHandle.current()
        self.stuckPassTimeout = configuration.global.stuckPassTimeout
        queue.name = "ferry-passes"
        queue.maxConcurrentOperationCount = configuration.global.maxConcurrentPasses
        let now = ContinuousClock.now
        for store in configuration.stores {
            schedules[store.name] = StoreSchedule(configuration: store, dueAt: now, trigger: .onDemand)
        }
    }

    /// Syncs every store now, then on its interval.
    public func start() {
        assertOwner()
        dispatchDuePasses()
    }

    /// Applies a reloaded configuration: added stores sync now, removed ones are cancelled and
    /// forgotten, changed ones restart with the new settings. Rows of removed stores stay in
    /// the database (removing a table is the admin's decision, not a reload's).
    public func apply(_ configuration: FerryConfiguration) {
        assertOwner()
        queue.maxConcurrentOperationCount = configuration.global.maxConcurrentPasses
        stuckPassTimeout = configuration.global.stuckPassTimeout
        backoff = configuration.global.backoff
        let now = ContinuousClock.now
        let incoming = Dictionary(uniqueKeysWithValues: configuration.stores.map { ($0.name, $0) })
        for (name, schedule) in schedules where incoming[name] == nil {
            schedule.running?.cancel()
            schedules[name] = nil
            logger.notice("store removed from the configuration; its table stays in the database", metadata: ["store": "\(name)"])
        }
        for (name, store) in incoming {
            if var schedule = schedules[name] {
                if schedule.configuration != store {
                    schedule.running?.cancel()
                    schedule.configuration = store
                    schedule.consecutiveFailures = 0
                    schedule.lastError = nil
                    logger.notice("store configuration changed", metadata: ["store": "\(name)"])
                }
                schedules[name] = schedule
            } else {
                schedules[name] = StoreSchedule(configuration: store, dueAt: now, trigger: .onDemand)
                logger.notice("store added", metadata: ["store": "\(name)"])
            }
        }
        dispatchDuePasses()
    }

    /// Makes every store due now (SIGHUP, `ferry reload`); a store already syncing runs again
    /// once its pass ends.
    public func resyncAll() {
        assertOwner()
        let now = ContinuousClock.now
        for name in schedules.keys {
            if schedules[name]!.running != nil {
                schedules[name]!.rerunRequested = true
            } else {
                schedules[name]!.nextDue = now
                schedules[name]!.trigger = .onDemand
            }
        }
        dispatchDuePasses()
    }

    /// Cancels every pass; `completion` runs on the owner's loop once all have finished (each
    /// rolls back its open transaction) or after `timeout`, whichever is first.
    public func stop(timeout: Duration, completion: @escaping @Sendable (_ drained: Bool) -> Void) {
        assertOwner()
        stopping = true
        timer?.invalidate()
        timer = nil
        queue.cancelAllOperations()
        waitForPasses(until: .now + timeout, completion: completion)
    }

    private func waitForPasses(until deadline: ContinuousClock.Instant, completion: @escaping @Sendable (Bool) -> Void) {
        let busy = schedules.values.contains { $0.running != nil }
        if !busy || ContinuousClock.now >= deadline {
            completion(!busy)
            return
        }
        let timer = Timer(timeInterval: 0.01, repeats: false) { [self] _ in
            self.waitForPasses(until: deadline, completion: completion)
        }
        RunLoop.current.add(timer, forMode: .default)
    }

    public var snapshot: Snapshot {
        assertOwner()
        let now = ContinuousClock.now
        var snapshot = Snapshot(stores: schedules.count, names: schedules.keys.sorted(), failing: [], running: [], lastPassFinished: nil, records: 0, stuck: [])
        for (name, schedule) in schedules.sorted(by: { $0.key < $1.key }) {
            if schedule.isFailing {
                snapshot.failing.append(name)
                if let error = schedule.lastError {
                    // A database failure on an unwritable replica: say what is wrong with it.
                    // SQLite may say only "disk I/O error" where the volume probe knows better.
                    snapshot.causes[name] = if case .store = error.kind { replicaProblem ?? error.kind.statusCause } else { error.kind.statusCause }
                }
            }
            if let running = schedule.running {
                snapshot.running.append(name)
                if now - running.progress.lastAdvance > stuckPassTimeout, running.isExecuting {
                    snapshot.stuck.append(name)
                }
            }
            if let finished = schedule.lastFinished, finished > (snapshot.lastPassFinished ?? finished - .seconds(1)) {
                snapshot.lastPassFinished = finished
            }
            snapshot.records += schedule.lastReport?.recordCount ?? 0
        }
        snapshot.replicaProblem = replicaProblem
        return snapshot
    }

    // MARK: - Dispatching

    private func dispatchDuePasses() {
        guard !stopping else { return }
        let now = ContinuousClock.now
        let due = schedules.values
            .filter { $0.running == nil && $0.nextDue <= now }
            .sorted { lhs, rhs in
                if lhs.trigger != rhs.trigger { return lhs.trigger > rhs.trigger }
                if lhs.configuration.priority != rhs.configuration.priority { return lhs.configuration.priority > rhs.configuration.priority }
                return lhs.nextDue < rhs.nextDue
            }
        // The queue holds at most two passes per slot; the rest wait here, ordered.
        let queued = schedules.values.filter { $0.running != nil }.count
        let room = max(0, queue.maxConcurrentOperationCount * 2 - queued)
        for schedule in due.prefix(room) {
            startPass(for: schedule.configuration.name, now: now)
        }
        armTimer()
    }

    private func startPass(for name: String, now: ContinuousClock.Instant) {
        guard var schedule = schedules[name] else { return }
        passCounter += 1
        let reconcile = schedule.needsReconciliation(now: now)
        let operation = SyncPassOperation(.init(
            store: schedule.configuration, database: database, trigger: schedule.trigger,
            reconcile: reconcile, pass: passCounter, logger: logger))
        let pass = passCounter
        // Identify the pass by store and number: capturing the operation in its own completion
        // block would be a retain cycle.
        operation.completionBlock = { [owner, weak self] in
            owner.perform { [weak self] in
                self?.passFinished(store: name, pass: pass, reconciled: reconcile)
            }
        }
        schedule.running = operation
        schedule.rerunRequested = false
        schedules[name] = schedule
        queue.addOperation(operation)
    }

    private func passFinished(store name: String, pass: Int, reconciled: Bool) {
        guard var schedule = schedules[name], let operation = schedule.running, operation.setup.pass == pass else { return }
        let now = ContinuousClock.now
        schedule.running = nil
        schedule.lastFinished = now
        let outcome: Result<PassReport, SyncError>
        switch operation.result {
        case .success(let report):
            outcome = .success(report)
            schedule.lastReport = report
            schedule.consecutiveFailures = 0
            schedule.lastError = nil
            replicaProblem = nil
            if reconciled, case .swept = report.reconciliation { schedule.lastReconcile = now }
            let jitter = schedule.configuration.jitter * Double.random(in: 0..<1)
            schedule.nextDue = now + schedule.configuration.interval + jitter
            schedule.trigger = .scheduled
        case .failure(let error as SyncError) where error.kind == .cancelled:
            outcome = .failure(error)
            schedule.nextDue = now
            schedule.trigger = .onDemand
        case .failure(let error):
            let failure = error as? SyncError ?? SyncError(.configuration, store: name, message: "\(error)")
            outcome = .failure(failure)
            if case .store = failure.kind { diagnoseReplica(store: name) }
            schedule.consecutiveFailures += 1
            schedule.lastError = failure
            let delay = backoff.delay(afterFailures: schedule.consecutiveFailures, error: failure, unit: Double.random(in: 0..<1))
            schedule.nextDue = now + delay
            schedule.trigger = .scheduled
            logger.warning("backing off \(String(format: "%.1f", delay.seconds)) s after \(schedule.consecutiveFailures) failure(s)", metadata: [
                "store": "\(name)",
                "message_id": "\(MessageID.backoff.rawValue)",
                "failures": "\(schedule.consecutiveFailures)",
                "delay_ms": "\(Int(delay.seconds * 1000))",
            ])
        case nil:
            preconditionFailure("\(operation) completed without a result")
        }
        if schedule.rerunRequested {
            schedule.nextDue = now
            schedule.trigger = .onDemand
        }
        schedules[name] = schedule
        onPassFinished?(outcome)
        dispatchDuePasses()
    }

    /// A pass failed in the database: find out whether the file system took the replica away
    /// (read-only, full), since SQLite may only say "disk I/O error", and say so once.
    private func diagnoseReplica(store name: String) {
        let problem: String?
        do {
            problem = try ReplicaVolume.probe(databasePath: database.path).problem
        } catch {
            logger.warning("\(error)", metadata: ["store": "\(name)"])
            return
        }
        guard let problem else { return }
        if problem != replicaProblem {
            logger.error("\(problem): \(database.path); passes fail until it takes writes again", metadata: [
                "store": "\(name)",
                "message_id": "\(MessageID.replicaUnwritable.rawValue)",
            ])
        }
        replicaProblem = problem
    }

    /// Points the one scheduling timer at the earliest store that can start.
    ///
    /// While the queue is full no timer is needed: the next finishing pass dispatches what is
    /// due. (A timer armed for a store already due but without room fired at once, found no
    /// room and re-armed itself: a busy loop of about 12,000 timers a second.) The timer is
    /// created once and moved with `fireDate`, because swift-corelibs-foundation never frees
    /// an invalidated block-based Timer (about 300 bytes each: one per pass, measured with
    /// heaptrack under the 200-store load run of Tests/Reliability/daemon_suite.py).
    private func armTimer() {
        guard !stopping else { return }
        let running = schedules.values.filter { $0.running != nil }.count
        let full = running >= queue.maxConcurrentOperationCount * 2
        let next = full ? nil : schedules.values.filter { $0.running == nil }.map(\.nextDue).min()
        let timer = self.timer ?? makeTimer()
        guard let next else {
            timer.fireDate = .distantFuture
            return
        }
        let delay = max(0, (next - .now).seconds)
        // A little tolerance lets the kernel batch wake-ups of stores due close together.
        timer.tolerance = min(1, delay / 20)
        timer.fireDate = Date(timeIntervalSinceNow: delay)
    }

    /// The scheduler's one timer: repeating (a one-shot timer is invalid once fired, and
    /// could not be moved again) with an interval so long that only `fireDate` matters.
    private func makeTimer() -> Timer {
        let timer = Timer(fire: .distantFuture, interval: 365 * 86_400, repeats: true) { [weak self] _ in
            self?.dispatchDuePasses()
        }
        RunLoop.current.add(timer, forMode: .default)
        self.timer = timer
        return timer
    }

    private func assertOwner(_ function: StaticString = #function) {
        precondition(owner.isCurrent, "Scheduler.\(function) called off its run loop's thread")
    }
}
