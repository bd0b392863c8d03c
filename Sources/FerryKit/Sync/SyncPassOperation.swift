import Foundation
import Logging
import Synchronization

/// One sync pass of one store: a run-loop operation that claims the store, pushes its queued
/// local changes (``PushPhase``), then pulls (``PullPhase``), all on its own thread:
/// `idle → pushing → pulling → done`.
///
/// Each batch commits with its cursor in one transaction, so a pass interrupted at any
/// instant (cancel, SIGKILL, a full disk) leaves the replica at the last committed batch, and
/// the next pass resumes from there. The source starts fetching page N+1 before it hands over
/// page N, so the network and the merge overlap.
public final class SyncPassOperation: RunLoopOperation<PassReport, SyncError>, @unchecked Sendable {
    /// Everything a pass needs; the scheduler builds it from the running configuration.
    public struct Setup: Sendable {
        public var store: StoreConfiguration
        public var database: SharedDatabase
        public var trigger: PassTrigger
        /// Also sweep records deleted remotely (for kinds that do not report deletions).
        public var reconcile: Bool
        /// With `reconcile`: sweep only when the replica's last sweep is at least this old
        /// (``SweepSchedule``); nil sweeps now.
        public var sweepInterval: Duration?
        public var pass: Int
        public var logger: Logger
        /// Pull after pushing; false for `ferry push`, which only pushes.
        public var pull: Bool
        /// Where the pass's requests and bytes are added up (ferryd's metrics), if anywhere.
        public var tally: TransferTally?
        /// The remote's current token, just read by someone else (``PassPlan/currentToken``):
        /// used only when this pass pushed nothing, as a push moves the remote on.
        public var currentToken: String?
        /// A rebuild a person asked for (`ferry resync`): read everything whatever the stored
        /// cursor, list every id, and sweep what the remote no longer has whatever
        /// `max-delete-share` says. (A pass rebuilds on its own, within max-delete-share, when
        /// the store's ``StoreConfiguration/identity`` changed since its rows were synced.)
        public var resync = false
        /// How long to wait for another process that is syncing the store (a one-shot
        /// command's); nil gives up at once (ferryd, which tries again soon).
        public var claimWait: Duration?

        public init(store: StoreConfiguration, database: SharedDatabase, trigger: PassTrigger, reconcile: Bool,
                    sweepInterval: Duration? = nil, pass: Int, logger: Logger, pull: Bool = true) {
            self.pull = pull
            self.store = store
            self.database = database
            self.trigger = trigger
            self.reconcile = reconcile
            self.sweepInterval = sweepInterval
            self.pass = pass
            self.logger = logger
        }
    }

    /// Where the pass is. What the pull changes on the shared connection is its own to undo
    /// (``PullPhase``); the claim is this operation's, released on the way out.
    private enum State {
        case idle
        /// Another process is syncing the store: this pass waits for it (``Setup/claimWait``),
        /// asking again each time this timer fires (every ``claimRetry``).
        case waitingForClaim(RepeatingTimer)
        /// Pushing the store's queued local changes, before its pull.
        case pushing(PushPhase)
        case pulling(PullPhase)
        case done
    }

    public let setup: Setup
    private let journal: PassJournal
    // Touched only on the operation's thread.
    private var state = State.idle
    private var report: PassReport
    private var started = ContinuousClock.now
    /// This pass's claim on its store (``ReplicaDatabase/claimPass(of:token:at:)``).
    private let claimToken = UUID().uuidString
    /// Until when the pass waits for another process's claim; set at the first refusal.
    private var claimDeadline: ContinuousClock.Instant?
    private let claimChecks = Atomic(0)

    /// How many times the pass asked for its store's claim (the first time and every check
    /// while it waits for another process).
    var claimCheckCount: Int { claimChecks.load(ordering: .relaxed) }

    public init(_ setup: Setup) {
        self.setup = setup
        self.journal = PassJournal(logger: setup.logger, store: setup.store.name, pass: setup.pass)
        self.report = PassReport(store: setup.store.name, pass: setup.pass, trigger: setup.trigger)
        super.init(cancelled: .failure(SyncError(.cancelled, store: setup.store.name, message: "pass cancelled before it started")))
        // The thread's system name keeps 15 bytes: "pass " and the store's first ten.
        name = "pass \(setup.store.name)"
        queuePriority = Self.queuePriority(trigger: setup.trigger, store: setup.store.priority)
    }

    /// On-demand above notified above scheduled above backfill; the store's own priority breaks ties.
    static func queuePriority(trigger: PassTrigger, store: StorePriority) -> Operation.QueuePriority {
        switch (trigger, store) {
        case (.onDemand, _): .veryHigh
        case (.notified, _): .high
        case (.scheduled, .high): .high
        case (.scheduled, .normal): .normal
        case (.scheduled, .low): .low
        case (.backfill, _): .veryLow
        }
    }

    public override func run() {
        started = .now
        setup.tally?.install()
        claimThenPush()
    }

    /// How often a waiting pass asks again for another process's claim.
    static let claimRetry: TimeInterval = 0.25

    /// Claims the store for this process, then pushes what is queued (or pulls). Another live
    /// process holding it: wait for it as the setup allows, else end as ``SyncError/Kind/busy``
    /// having done nothing.
    private func claimThenPush() {
        claimChecks.add(1, ordering: .relaxed)
        let store = setup.store
        let holder: ReplicaDatabase.PassClaimHolder?
        do {
            holder = try setup.database.write { database throws(StoreError) in
                try database.prepare(StoreDefinition(store), verifyingSchema: setup.resync)
                return try database.claimPass(of: store.name, token: claimToken, at: Date())
            }
        } catch {
            return end(.failure(SyncError(error, store: store.name)))
        }
        if let holder {
            if claimDeadline == nil, let wait = setup.claimWait {
                claimDeadline = .now + wait
                journal.logger.notice("store \(store.name): \(holder.name) is syncing it; waiting up to \(ConfigurationUnits.format(wait))")
            }
            guard let deadline = claimDeadline, .now < deadline else {
                let since = holder.since.map { " (since \(InternetTimestamp.string(from: $0)))" } ?? ""
                return end(.failure(SyncError(.busy, store: store.name, message: "\(holder.name) is syncing this store\(since); nothing was done")))
            }
            if case .idle = state {
                // One timer for the whole wait: one check per interval, and the thread sleeps
                // in between (a `Timer(timeInterval:repeats:false)` fires at once on Linux,
                // which made this a loop of about 900 checks a second).
                let timer = RepeatingTimer(every: Self.claimRetry) { [weak self] in
                    guard let self, case .waitingForClaim = self.state else { return }
                    self.claimThenPush()
                }
                state = .waitingForClaim(timer)
            }
            return
        }
        if case .waitingForClaim(let timer) = state {
            timer.invalidate()
            state = .idle
        }
        let changes: [LocalChange]
        do {
            changes = try setup.database.write { database throws(StoreError) -> [LocalChange] in
                try database.recordAttempt(of: store.name, at: Date())
                guard store.writeBack.push else { return [] }
                // Held conflicts somebody resolved are carried out before anything is pushed.
                let resolved = try database.applyResolutions(of: store.name, at: Date())
                if resolved > 0 { journal.logger.notice("store \(store.name): carried out \(resolved) chosen conflict resolution\(resolved == 1 ? "" : "s")") }
                return try database.queuedLocalChanges(of: store.name, limit: PushPhase.changesPerPush)
            }
        } catch {
            end(.failure(SyncError(error, store: store.name)))
            return
        }
        guard !changes.isEmpty else { return startPull() }
        let phase = PushPhase(store: store, database: setup.database, journal: journal) { [unowned self] in
            updateProgress { $0.lastAdvance = .now }
        }
        state = .pushing(phase)
        phase.start(changes) { [unowned self] result in
            guard case .pushing = state else { return }
            switch result {
            case .success(let counts):
                report.push = counts
                state = .idle
                startPull()
            case .failure(let error):
                end(.failure(error))
            }
        }
    }

    /// After the push (or without one): the pull, unless the pass only pushes.
    private func startPull() {
        let store = setup.store
        guard setup.pull else {
            state = .idle
            return finishWithoutPull()
        }
        let context = PullPhase.Context(
            store: store, database: setup.database, journal: journal, trigger: setup.trigger, reconcile: setup.reconcile,
            sweepInterval: setup.sweepInterval, resync: setup.resync,
            currentToken: report.push.isEmpty ? setup.currentToken : nil
        ) { [unowned self] (changes: Int, pages: Int, total: Int64?) in
            updateProgress { progress in
                progress.completedUnits += Int64(changes)
                progress.completedPages += pages
                if let total { progress.totalUnits = total }
                progress.lastAdvance = .now
            }
        }
        let phase = PullPhase(context, report: report)
        state = .pulling(phase)
        phase.start { [unowned self] (result: Result<PassReport, SyncError>) in
            guard case .pulling = state else { return }
            end(result)
        }
    }

    public override func cancelRun() {
        switch state {
        case .pulling(let phase): phase.cancel(SyncError(.cancelled, store: setup.store.name, message: "pass cancelled"))
        case .pushing(let phase): phase.cancel()
        case .waitingForClaim(let timer): timer.invalidate()
        case .idle, .done: break
        }
        end(.failure(SyncError(.cancelled, store: setup.store.name, message: "pass cancelled")))
    }

    /// A push-only pass (`ferry push`) ends here: recorded as an attempt that pushed, never as
    /// a pull's success, so the store's cursor and last success stay the pull's.
    private func finishWithoutPull() {
        report.pulled = false
        do {
            let gaps = try setup.database.write { database throws(StoreError) in
                try database.recordPushSucceeded(of: setup.store.name)
                return try database.unpushedGaps(of: setup.store, queued: &report.localQueued)
            }
            report.gaps = gaps
        } catch {
            end(.failure(SyncError(error, store: setup.store.name)))
            return
        }
        end(.success(report))
    }

    // MARK: - Ending

    /// The one way out (the phases have undone what they set up by then): records a failure
    /// (never a cancellation) in the replica, releases the claim, tells the journal, and
    /// finishes.
    private func end(_ result: Result<PassReport, SyncError>) {
        var result = result.mapError { $0.redacting(setup.store.secrets) }
        switch state {
        case .done: return
        case .idle, .pushing: break
        case .pulling(let phase): report.pages = phase.pages
        case .waitingForClaim(let timer): timer.invalidate()
        }
        state = .done
        TransferTally.uninstall()
        let store = setup.store.name
        setup.database.write { database in
            result = result.mapError { database.recordingFailure($0, of: store, byPush: !setup.pull) }
            database.releasePass(of: store, token: claimToken)
            database.release(store)
        }
        if case .success(var report) = result {
            report.duration = .now - started
            self.report = report
            result = .success(report)
        }
        journal.ended(result, afterPages: report.pages)
        finish(result)
    }
}
