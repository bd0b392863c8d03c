import Foundation
import Logging

/// One sync pass of one store: a run-loop operation that drives the store's ``RemoteSource``
/// on its own thread and merges every batch into the replica as it arrives.
///
/// Each batch commits with its cursor in one transaction, so a pass interrupted at any
/// instant (cancel, SIGKILL, a full disk) leaves the replica at the last committed batch, and
/// the next pass resumes from there. A first sync into an empty table holds its batches and
/// merges them in id order instead (``SpooledFirstSync``), with the same rows and cursor. The source starts fetching page N+1 before it hands over
/// page N, so the network and the merge overlap.
public final class SyncPassOperation: RunLoopOperation<PassReport>, RemoteSourceSink, @unchecked Sendable {
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

    /// Where the pass is. What a pass changes on the shared connection (reconciliation marks,
    /// bulk pragmas) is recorded in the `syncing` value, so every way out undoes exactly that.
    private enum State {
        case idle
        /// Another process is syncing the store: this pass waits for it (``Setup/claimWait``),
        /// trying again on this timer.
        case waitingForClaim(Timer)
        /// Pushing the store's queued local changes, before its pull.
        case pushing(PushPhase)
        case syncing(Pass)
        case done
    }

    /// A running pass.
    private struct Pass {
        var source: any RemoteSource
        var plan: PassPlan
        /// The connection is tuned for a first sync (``ReplicaDatabase/setBulkMode(_:)``).
        var bulk: Bool
        /// A reconciliation listing is being marked (``ReplicaDatabase/beginReconciliation(of:)``).
        var marking = false
        /// Live rows before the pass wrote any, the base of `max-delete-share`.
        var rowsBefore: Int?
        /// The final cursor of a pass whose cursor also vouches for deletions (a DAV sync
        /// token after a full listing): it commits with the sweep, never without it, so a
        /// refused sweep leaves the resync to do again.
        var heldCursor: String?
        /// A rebuild of a store that has rows: batches are kept aside
        /// (``ReplicaDatabase/stage(_:for:)``) and switched in at the end, in one transaction.
        var staging = false
        /// The staged batches' records that could not be turned into changes, for the switch.
        var stagedProblems: [RecordProblem] = []
        /// A first sync into an empty table: batches are held and merged in id order.
        var spooled: SpooledFirstSync?
        /// A first sync into an empty table: read to the end without a gap, its rows are its
        /// listing, as after a clean sweep.
        var fillsEmptyTable = false
    }

    public let setup: Setup
    private let journal: PassJournal
    // Touched only on the operation's thread.
    private var state = State.idle
    private var report: PassReport
    private var started = ContinuousClock.now
    /// This pass reads everything again (``Setup/resync``, or the store's identity moved).
    private var rebuilding = false
    /// This pass's claim on its store (``ReplicaDatabase/claimPass(of:token:at:)``).
    private let claimToken = UUID().uuidString
    /// Until when the pass waits for another process's claim; set at the first refusal.
    private var claimDeadline: ContinuousClock.Instant?

    public init(_ setup: Setup) {
        self.setup = setup
        self.journal = PassJournal(logger: setup.logger, store: setup.store.name, pass: setup.pass)
        self.report = PassReport(store: setup.store.name, pass: setup.pass, trigger: setup.trigger)
        super.init()
        // The thread's system name keeps 15 bytes: "pass " and the store's first ten.
        name = "pass \(setup.store.name)"
        queuePriority = Self.queuePriority(trigger: setup.trigger, store: setup.store.priority)
    }

    /// On-demand above scheduled above backfill; the store's own priority breaks ties.
    static func queuePriority(trigger: PassTrigger, store: StorePriority) -> Operation.QueuePriority {
        switch (trigger, store) {
        case (.onDemand, _): .veryHigh
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
                journal.logger.notice("store \(store.name): \(holder.command) (pid \(holder.pid)) is syncing it; waiting up to \(ConfigurationUnits.format(wait))")
            }
            guard let deadline = claimDeadline, .now < deadline else {
                return end(.failure(SyncError(.busy, store: store.name,
                                              message: "\(holder.command) (pid \(holder.pid)) is syncing this store (since \(InternetTimestamp.string(from: holder.since))); nothing was done")))
            }
            let timer = Timer(timeInterval: Self.claimRetry, repeats: false) { [weak self] _ in
                guard let self, case .waitingForClaim = self.state else { return }
                self.state = .idle
                self.claimThenPush()
            }
            RunLoop.current.add(timer, forMode: .default)
            state = .waitingForClaim(timer)
            return
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
        let plan: PassPlan
        let rowsBefore: Int?
        let decision: PassPlanner.Decision
        do {
            (plan, rowsBefore, decision) = try setup.database.write { database throws(StoreError) in
                let state = try database.syncState(of: store.name)
                // Rows synced from another URL, class or filter, or a rebuild asked for: the
                // stored cursor means nothing here; everything is read again and what the
                // remote lacks is swept. The old rows stay as they are meanwhile, the new ones
                // replace them in one transaction, and the change log gets the difference,
                // not a delete-all and insert-all. What a rebuild cut short kept aside goes.
                try database.discardStaged(of: store.name)
                let recorded = try database.storeIdentity(of: store.name)
                let moved = recorded.map { $0 != store.identity } ?? false
                if moved { journal.logger.notice("store \(store.name): url, class or filter changed since its rows were synced; rebuilding it from the remote") }
                var facts = PassPlanner.Facts()
                facts.resync = setup.resync
                facts.identityMoved = moved
                facts.hasCursor = state?.cursor != nil
                facts.hasRecords = try database.hasRecords(in: store.name)
                facts.hasPendingRecords = state?.pendingRecords ?? 0 > 0
                facts.sweepDue = SweepSchedule.sweeps(asked: setup.reconcile, every: setup.sweepInterval, lastSwept: state?.lastSwept, now: Date())
                facts.sweepOwed = state?.sweepPending == true
                facts.sweepScheduled = setup.sweepInterval != nil
                facts.reportsDeletions = store.kind.reportsDeletions
                facts.fetchesByID = store.kind.fetchesByID
                let decision = PassPlanner.plan(facts)
                rebuilding = if case .rebuild = decision.mode { true } else { false }
                let cursor = decision.usesCursor ? state?.cursor : nil
                if cursor == nil { try database.noteFirstSyncStarted(of: store.name) }
                let pending = decision.fetchesPending ? try database.pendingRecordIDs(of: store.name) : []
                var plan = PassPlan(cursor: cursor, reconcile: decision.sweeps, pendingIDs: pending,
                                    revalidate: setup.trigger == .onDemand, currentToken: report.push.isEmpty ? setup.currentToken : nil)
                if decision.trustsPageDigests {
                    plan.pageDigests = try database.pageDigests(of: store.name)
                    if decision.mayTakeListingAtRest {
                        plan.listingAtRest = try database.listingAtRest(of: store.name, digests: plan.pageDigests)
                    }
                } else {
                    try database.forgetPageDigests(of: store.name)
                }
                let rowsBefore = decision.countsRowsBefore(reportsDeletions: store.kind.reportsDeletions) ? try database.liveRecordCount(of: store.name) : nil
                return (plan, rowsBefore, decision)
            }
        } catch {
            end(.failure(SyncError(error, store: store.name)))
            return
        }
        report.wasFullSync = plan.cursor == nil
        journal.started(trigger: setup.trigger, plan: plan)
        let source: any RemoteSource
        do {
            source = try store.options.value.makeSource(RemoteSourceContext(store: store, logger: journal.logger))
        } catch {
            end(.failure(error))
            return
        }
        var pass = Pass(source: source, plan: plan, bulk: false, rowsBefore: rowsBefore)
        pass.fillsEmptyTable = decision.fillsEmptyTable
        // A store without rows has nothing to keep visible: its rebuild is a first sync.
        pass.staging = decision.mode == .rebuild(staged: true)
        if decision.bulk {
            // A first sync writes the whole store: tune the connection for it.
            do {
                let spooling = decision.fillsEmptyTable
                try setup.database.write { database throws(StoreError) in try database.setBulkMode(true, cacheMiB: spooling ? 16 : 64) }
                pass.bulk = true
                if spooling {
                    pass.spooled = SpooledFirstSync(replicaPath: setup.database.path, store: store.name, origin: store.url.redactingUserInfo)
                }
            } catch {
                end(.failure(SyncError(error, store: store.name)))
                return
            }
        }
        state = .syncing(pass)
        source.start(plan, sink: self)
    }

    public override func cancelRun() {
        switch state {
        case .syncing(let pass): pass.source.cancel()
        case .pushing(let phase): phase.cancel()
        case .waitingForClaim(let timer): timer.invalidate()
        case .idle, .done: break
        }
        end(.failure(SyncError(.cancelled, store: setup.store.name, message: "pass cancelled")))
    }

    // MARK: - RemoteSourceSink

    public func source(_ source: any RemoteSource, didProduce batch: ChangeBatch) throws {
        guard case .syncing(var pass) = state else { return }
        let store = setup.store.name
        var batch = batch
        // A staged rebuild's cursor, and that of a DAV pass whose cursor vouches for its
        // sweep, commit with the sweep, never before it.
        if pass.staging || (pass.marking && setup.store.kind.reportsDeletions), let cursor = batch.cursor {
            pass.heldCursor = cursor
            batch.cursor = nil
            state = .syncing(pass)
        }
        if pass.staging {
            try write(url: batch.origin) { database throws(StoreError) in try database.stage(batch, for: store) }
            pass.stagedProblems += batch.problems
            state = .syncing(pass)
        } else if let spooled = pass.spooled, SpooledFirstSync.accepts(batch, maxRecordBytes: setup.store.maxRecordBytes) {
            let due: Bool
            do { due = try spooled.hold(batch) } catch {
                let failure = SyncError(error, store: store, url: batch.origin)
                end(.failure(failure))
                throw failure
            }
            if due { try drain(spooled) }
        } else {
            // Held batches go first: a batch the merge may refuse records of meets the rows in
            // the remote's order.
            if let spooled = pass.spooled { try drain(spooled) }
            let counts = try write(url: batch.origin) { database throws(StoreError) in try database.apply(batch, to: store) }
            noteApplied(counts, origin: batch.origin)
        }
        report.pages += batch.pageCount
        report.pagesUnchanged += batch.unchangedPages
        updateProgress { progress in
            progress.completedUnits += Int64(batch.changes.count)
            progress.completedPages += batch.pageCount
            if let total = batch.totalHint { progress.totalUnits = total }
            progress.lastAdvance = .now
        }
    }

    /// Counts what a merge did and journals its skipped records and conflicts.
    private func noteApplied(_ counts: MergeCounts, origin: String) {
        report.counts += counts
        for problem in counts.problems {
            journal.skipped(problem, origin: redacted(origin))
        }
        if counts.conflicts > 0 {
            journal.pulledConflicts(counts.conflicts, policy: setup.store.writeBack.conflict)
        }
    }

    public func source(_ source: any RemoteSource, didList ids: [String]) throws {
        guard case .syncing(var pass) = state else { return }
        let store = setup.store.name
        // Marks count the rows a pass merged: held batches are merged first, and the rest of
        // the pass merges as it goes.
        if let spooled = pass.spooled {
            try drain(spooled)
            spooled.close()
            pass.spooled = nil
            state = .syncing(pass)
        }
        let beginning = !pass.marking
        let rowsBefore = try write { database throws(StoreError) in
            var rows = pass.rowsBefore
            if beginning {
                // A kind that decides to list on its own (a refused sync token) lists before
                // it hands over anything: the rows now are the rows before the pass.
                if rows == nil { rows = try database.recordCount(of: store) }
                try database.beginReconciliation(of: store)
            }
            try database.markPresent(ids, in: store)
            return rows
        }
        pass.rowsBefore = rowsBefore
        pass.marking = true
        state = .syncing(pass)
        updateProgress { $0.lastAdvance = .now }
    }

    public func source(_ source: any RemoteSource, didFinishWith outcome: SourceOutcome) {
        guard case .syncing(var pass) = state else { return }
        let store = setup.store
        report.requests = outcome.requests
        report.unchanged = outcome.unchanged
        var gaps = outcome.gaps
        if let spooled = pass.spooled {
            do throws(SyncError) { try drain(spooled) } catch { return }
        }
        do {
            try setup.database.write { database throws(StoreError) in
                var cursor = pass.heldCursor
                // Whether the rows now come from the configured source: always, unless a staged
                // rebuild did not switch.
                var rebuilt = !pass.staging
                if pass.plan.reconcile, outcome.listingComplete, !outcome.listingUnchanged, !pass.marking {
                    // A complete listing that named no id: every live row is gone from the
                    // remote. The sweep decides as for any listing (`max-delete-share` first);
                    // without marks there would be no sweep at all, and the pass would say ok.
                    try database.beginReconciliation(of: store.name)
                    pass.marking = true
                }
                if pass.marking {
                    // The marks are gone once finished or cancelled, whatever follows.
                    pass.marking = false
                    state = .syncing(pass)
                    if outcome.listingComplete {
                        // A rebuild a person asked for lets go of whatever the remote lacks.
                        let share = setup.resync ? 1 : store.maxDeleteShare
                        let result: ReconcileOutcome
                        if pass.staging {
                            switch try database.switchToRebuilt(store.name, problems: pass.stagedProblems, maxDeleteShare: share,
                                                                rowsBefore: pass.rowsBefore, cursor: cursor) {
                            case .switched(let counts, let deleted):
                                noteApplied(counts, origin: store.url.redactingUserInfo)
                                result = .swept(deleted: deleted)
                                rebuilt = true
                            case .refused(let wouldDelete, let total):
                                result = .refused(wouldDelete: wouldDelete, of: total)
                            }
                            // Stored by the switch, or not at all.
                            cursor = nil
                        } else {
                            // A sweep that trusted page digests checks what they vouched for.
                            if report.pagesUnchanged > 0 {
                                let missing = try database.listedRecordsMissing(from: store.name)
                                if missing > 0 {
                                    try database.forgetPageDigests(of: store.name)
                                    gaps.append(.listedRecordsMissing(count: missing))
                                }
                            }
                            result = try database.finishReconciliation(of: store.name, maxDeleteShare: share, rowsBefore: pass.rowsBefore)
                            if case .swept(let deleted) = result { report.counts.deleted += deleted }
                        }
                        report.reconciliation = result
                        if case .refused(let wouldDelete, let total) = result {
                            gaps.append(.sweepRefused(wouldDelete: wouldDelete, of: total, maxShare: store.maxDeleteShare))
                            // The token vouches for a sweep that did not happen: keep the old one.
                            cursor = nil
                        }
                    } else {
                        database.cancelReconciliation(of: store.name)
                    }
                } else if outcome.listingUnchanged {
                    // Every page as the last sweep listed it, and no row inserted or deleted
                    // since: the listing names exactly the live rows, so nothing goes.
                    precondition(pass.plan.listingAtRest && outcome.listingComplete, "a listing vouched unchanged that the plan did not vouch for")
                    report.reconciliation = .swept(deleted: 0)
                    report.listingUnchanged = true
                    journal.logger.debug("store \(store.name): sweep: every page is as the last sweep listed it; nothing to delete")
                }
                if !rebuilt {
                    // Nothing of the rebuild reached the rows: they stay as they were, and the
                    // next pass rebuilds again.
                    try database.discardStaged(of: store.name)
                    cursor = nil
                    if !gaps.contains(where: \.needsSweep) {
                        gaps.append(.sweepSkipped(reason: "the rebuild's id listing did not complete; the rows stay as they were"))
                    }
                }
                if pass.plan.reconcile, !outcome.listingComplete, !gaps.contains(where: \.needsSweep) {
                    gaps.append(.sweepSkipped(reason: "the id listing did not complete"))
                }
                // Counted once here (only when a transaction changed the count), and stored, so
                // the state read next does not count again.
                report.recordCount = try database.liveRecordCount(of: store.name)
                let idless = report.counts.problems.count { $0.id == nil }
                let pending = try database.syncState(of: store.name)?.pendingRecords ?? 0
                if pending + idless > 0 {
                    let sample = try database.pendingRecordIDs(of: store.name, limit: 3)
                    gaps.append(.recordsSkipped(count: pending + idless, sample: sample, rereadAll: idless > 0 || !store.kind.fetchesByID))
                }
                if let cursor { try database.storeCursor(cursor, of: store.name) }
                gaps += try localChangeGaps(database)
                let swept = if case .swept = report.reconciliation { true } else { false }
                if pass.plan.reconcile || pass.fillsEmptyTable {
                    try database.recordSweptListing(of: store.name, clean: (swept || pass.fillsEmptyTable) && rebuilt && gaps.isEmpty)
                }
                try database.recordSuccess(of: store.name, at: Date(), counts: report.counts, gaps: gaps, swept: swept)
                // What the rows now come from; a rebuild whose sweep was refused is not over,
                // and the next pass rebuilds again.
                if rebuilt, !gaps.contains(where: { if case .sweepRefused = $0 { true } else { false } }) {
                    try database.recordStoreIdentity(store.identity, of: store.name)
                }
            }
        } catch {
            end(.failure(SyncError(error, store: store.name)))
            return
        }
        report.gaps = gaps
        if case .refused(let wouldDelete, let total) = report.reconciliation {
            journal.refusedSweep(wouldDelete: wouldDelete, of: total, maxDeleteShare: store.maxDeleteShare)
        }
        end(.success(report))
    }

    public func source(_ source: any RemoteSource, didFailWith error: SyncError) {
        guard case .syncing = state else { return }
        end(.failure(error))
    }

    /// Local writes the remote does not have when the pass ends: queued (written while it ran,
    /// or put off), held or refused. Any of them leaves the replica differing from the remote.
    private func localChangeGaps(_ database: ReplicaDatabase) throws(StoreError) -> [ReplicaGap] {
        guard setup.store.writeBack.push else { return [] }
        let outbox = try database.outboxSummary(of: setup.store.name)
        report.localQueued = outbox.queued
        guard !outbox.isEmpty else { return [] }
        return [.localChangesNotPushed(queued: outbox.queued, held: outbox.held, refused: outbox.refused, reason: outbox.lastRefusal)]
    }

    /// A push-only pass (`ferry push`) ends here: recorded as an attempt that pushed, never as
    /// a pull's success, so the store's cursor and last success stay the pull's.
    private func finishWithoutPull() {
        report.pulled = false
        do {
            let gaps = try setup.database.write { database throws(StoreError) in
                try database.recordPushSucceeded(of: setup.store.name)
                return try localChangeGaps(database)
            }
            report.gaps = gaps
        } catch {
            end(.failure(SyncError(error, store: setup.store.name)))
            return
        }
        end(.success(report))
    }

    /// Runs a write for a sink call; a replica failure ends the pass and is rethrown, so the
    /// source stops.
    private func write<T>(url: String = "", _ body: (ReplicaDatabase) throws(StoreError) -> T) throws(SyncError) -> T {
        do {
            return try setup.database.write(body)
        } catch {
            let failure = SyncError(error, store: setup.store.name, url: url)
            end(.failure(failure))
            throw failure
        }
    }

    /// Merges a first sync's held batches, a chunk per transaction, each under the shared lock
    /// on its own, so other stores' passes interleave with a long drain. A failure ends the pass.
    private func drain(_ spooled: SpooledFirstSync) throws(SyncError) {
        guard !spooled.isEmpty else { return }
        let store = setup.store.name
        let held = spooled.heldRecords
        let large = !spooled.isInMemory
        let start = ContinuousClock.now
        defer {
            // A large first sync's table fills at its drains: say when, for whoever watches it.
            let text = "store \(store): merged \(held) fetched records in id order in \(String(format: "%.1f", (ContinuousClock.now - start).seconds)) s"
            if large { journal.logger.info("\(text)") } else { journal.logger.debug("\(text)") }
        }
        do {
            try spooled.drain { batch throws(SyncError) in
                let counts = try write(url: batch.origin) { database throws(StoreError) in try database.apply(batch, to: store) }
                noteApplied(counts, origin: batch.origin)
                updateProgress { $0.lastAdvance = .now }
            }
        } catch {
            end(.failure(error))
            throw error
        }
    }

    /// `text` without any of the store's secrets (a URL a server sent back may hold one).
    private func redacted(_ text: String) -> String {
        text.redactingSecrets(setup.store.secrets)
    }

    // MARK: - Ending

    /// The one way out: undoes what the pass set up on the connection, records a failure
    /// (never a cancellation) in the replica, tells the journal, and finishes.
    private func end(_ result: Result<PassReport, SyncError>) {
        var result = result.mapError { $0.redacting(setup.store.secrets) }
        let pass: Pass?
        switch state {
        case .done: return
        case .idle, .pushing: pass = nil
        case .waitingForClaim(let timer):
            timer.invalidate()
            pass = nil
        case .syncing(let running): pass = running
        }
        state = .done
        TransferTally.uninstall()
        let store = setup.store.name
        if let spooled = pass?.spooled {
            // What a failing first sync fetched is merged, as merging batch by batch would have
            // kept it. A cancelled pass (a shutdown, a stall) merges it only when it is all in
            // memory, a second's work: a shutdown does not wait for runs on disk, which the
            // next pass fetches again.
            if case .failure(let failure) = result, failure.kind != .cancelled || spooled.isInMemory, spooled.mayDrain {
                do throws(SyncError) { try drain(spooled) } catch {
                    journal.logger.warning("store \(store): could not merge what the failed first sync fetched: \(redacted(error.description))")
                }
            }
            spooled.close()
        }
        setup.database.write { database in
            if pass?.marking == true { database.cancelReconciliation(of: store) }
            // A failed rebuild's records kept aside are not worth their disk space: the next
            // rebuild reads them again (and discards any left by a crash first).
            if pass?.staging == true, case .failure = result { try? database.discardStaged(of: store) }
            // Restoring the pragmas cannot fail in a way that would change the outcome.
            if pass?.bulk == true { try? database.setBulkMode(false) }
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
        finish(result.mapError { $0 })
    }
}
