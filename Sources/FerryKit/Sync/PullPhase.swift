import Foundation
import Logging

/// The pull phase of a pass: plans the pull from what the replica says (``PassPlanner``),
/// drives the store's ``RemoteSource`` and merges every batch into the replica as it arrives.
/// The pass operation starts it on its run loop, after the push, and hears once how it ended.
///
/// How batches reach the rows is one ``Writing`` value, chosen by the plan's mode: merged as
/// they come (incremental, or a first sync over rows), held and merged in id order (a first
/// sync into an empty table), or set aside and switched in at the end (a rebuild of a table
/// with rows). Whatever the phase changed on the shared connection (sweep marks, bulk pragmas,
/// staged rows) is undone on every way out, by ``stop(after:)``.
final class PullPhase: RemoteSourceSink {
    /// What the pull needs from the pass.
    struct Context {
        var store: StoreConfiguration
        var database: SharedDatabase
        var journal: PassJournal
        var trigger: PassTrigger
        /// A sweep was asked for (`ferry sync --reconcile`, or the kind sweeps on a schedule).
        var reconcile: Bool
        var sweepInterval: Duration?
        /// A rebuild a person asked for (`ferry resync`).
        var resync: Bool
        /// The remote's current token read by someone else; nil when the push moved the remote on.
        var currentToken: String?
        /// Called whenever the pull advances (a batch merged, ids listed).
        var onAdvance: (_ changes: Int, _ pages: Int, _ totalHint: Int64?) -> Void
    }

    /// How batches reach the rows.
    private enum Writing {
        /// Merged as they arrive (an incremental pull, a first sync over rows, or a first sync
        /// whose held batches were merged when its listing began).
        case merging
        /// A first sync into an empty table: batches are held and merged in id order.
        case spooling(SpooledFirstSync)
        /// A rebuild of a table with rows: batches are kept aside (``ReplicaDatabase/stage(_:for:)``)
        /// and switched in at the end, in one transaction; the problems are for the switch.
        case staging(problems: [RecordProblem])
    }

    /// Whether a sweep's listing is being marked, and from how many rows.
    private enum Sweep {
        /// Nothing marked (yet).
        case idle(rowsBefore: Int?)
        /// A reconciliation listing is being marked (``ReplicaDatabase/beginReconciliation(of:)``).
        case marking(rowsBefore: Int?)

        var rowsBefore: Int? {
            switch self {
            case .idle(let rows), .marking(let rows): rows
            }
        }
        var isMarking: Bool { if case .marking = self { true } else { false } }
    }

    private enum State {
        case idle
        case pulling(Pull)
        case done
    }

    /// A running pull.
    private struct Pull {
        var source: any RemoteSource
        var plan: PassPlan
        var decision: PassPlanner.Decision
        var writing: Writing
        var sweep: Sweep
        /// The final cursor of a pull whose cursor must commit with something later: a staged
        /// rebuild's (with the switch), a DAV token after a full listing (with the sweep).
        var heldCursor: String?

        var isStaging: Bool { if case .staging = writing { true } else { false } }
        var spooled: SpooledFirstSync? { if case .spooling(let spooled) = writing { spooled } else { nil } }
    }

    private let context: Context
    private var state = State.idle
    private var report: PassReport
    private var completion: ((Result<PassReport, SyncError>) -> Void)?

    init(_ context: Context, report: PassReport) {
        self.context = context
        self.report = report
    }

    /// Pages merged so far, for the journal's line when the pass fails.
    var pages: Int { report.pages }

    private var store: StoreConfiguration { context.store }
    private var journal: PassJournal { context.journal }

    /// Plans and starts the pull; `completion` runs once, on this run loop, with `report`
    /// filled in.
    func start(completion: @escaping (Result<PassReport, SyncError>) -> Void) {
        guard case .idle = state else { preconditionFailure("a pull phase was started twice") }
        self.completion = completion
        var plan: PassPlan
        let rowsBefore: Int?
        let decision: PassPlanner.Decision
        do {
            (plan, rowsBefore, decision) = try context.database.write(planned)
        } catch {
            return finish(.failure(SyncError(error, store: store.name)))
        }
        report.wasFullSync = plan.cursor == nil
        journal.started(trigger: context.trigger, plan: plan)
        let source: any RemoteSource
        do {
            source = try store.options.value.makeSource(RemoteSourceContext(store: store, logger: journal.logger))
        } catch {
            return finish(.failure(error))
        }
        var writing = Writing.merging
        switch decision.mode {
        case .rebuild(staged: true): writing = .staging(problems: [])
        case .incremental, .firstSync, .rebuild(staged: false): break
        }
        if decision.bulk {
            // A first sync writes the whole store: tune the connection for it.
            do {
                let spooling = decision.fillsEmptyTable
                // Spooling, the pages go to sorted runs, not the b-tree: a 2 MiB cache serves the
                // drains' appends as fast as 16 did, 14 MB less of the first sync's peak.
                try context.database.write { database throws(StoreError) in try database.setBulkMode(true, cacheMiB: spooling ? 2 : 64) }
                if spooling {
                    plan.spooled = true
                    writing = .spooling(SpooledFirstSync(replicaPath: context.database.path, store: store.name, origin: store.url.redactingUserInfo))
                }
            } catch {
                return finish(.failure(SyncError(error, store: store.name)))
            }
        }
        state = .pulling(Pull(source: source, plan: plan, decision: decision, writing: writing, sweep: .idle(rowsBefore: rowsBefore)))
        source.start(plan, sink: self)
    }

    /// Stops the source and undoes what the pull set up; the completion does not run. What a
    /// first sync fetched is merged as ``stop(after:)`` says.
    func cancel(_ failure: SyncError) {
        if case .pulling(let pull) = state { pull.source.cancel() }
        stop(after: failure)
        completion = nil
    }

    /// Reads the facts, asks ``PassPlanner``, and prepares the replica for the decision.
    private func planned(_ database: ReplicaDatabase) throws(StoreError) -> (PassPlan, Int?, PassPlanner.Decision) {
        let state = try database.syncState(of: store.name)
        // Rows synced from another URL, class or filter, or a rebuild asked for: the stored
        // cursor means nothing here; everything is read again and what the remote lacks is
        // swept. The old rows stay as they are meanwhile, the new ones replace them in one
        // transaction, and the change log gets the difference, not a delete-all and
        // insert-all. What a rebuild cut short kept aside goes.
        try database.discardStaged(of: store.name)
        let recorded = try database.storeIdentity(of: store.name)
        let moved = recorded.map { $0 != store.identity } ?? false
        if moved { journal.logger.notice("store \(store.name): url, class or filter changed since its rows were synced; rebuilding it from the remote") }
        var facts = PassPlanner.Facts()
        facts.resync = context.resync
        facts.identityMoved = moved
        facts.hasCursor = state?.cursor != nil
        facts.hasRecords = try database.hasRecords(in: store.name)
        facts.hasPendingRecords = (state?.pendingRecords ?? 0) + (state?.createsToReadBack ?? 0) > 0
        facts.sweepDue = SweepSchedule.sweeps(asked: context.reconcile, every: context.sweepInterval, lastSwept: state?.lastSwept, now: Date())
        facts.sweepOwed = state?.sweepPending == true
        facts.sweepScheduled = context.sweepInterval != nil
        facts.reportsDeletions = store.kind.reportsDeletions
        facts.fetchesByID = store.kind.fetchesByID
        let decision = PassPlanner.plan(facts)
        let cursor = decision.usesCursor ? state?.cursor : nil
        if cursor == nil { try database.noteFirstSyncStarted(of: store.name) }
        let pending = decision.fetchesPending ? try database.pendingRecordIDs(of: store.name) : []
        var plan = PassPlan(cursor: cursor, reconcile: decision.sweeps, pendingIDs: pending,
                            revalidate: context.trigger == .onDemand, currentToken: context.currentToken)
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

    // MARK: - RemoteSourceSink

    func source(_ source: any RemoteSource, didProduce batch: ChangeBatch) throws {
        guard case .pulling(var pull) = state else { return }
        var batch = batch
        if let cursor = batch.cursor, Self.carriesSecret(cursor, store.secrets) {
            // A cursor is stored and shown by `ferry status`: one that carries a credential (a
            // server quoting a token into its sync token or link) is refused, not stored.
            let failure = SyncError(.malformedResponse, store: store.name, url: batch.origin.redactingSecrets(store.secrets),
                                    message: "the server's cursor carries one of the store's credentials; it is not stored")
            fail(failure)
            throw failure
        }
        // A staged rebuild's cursor, and that of a DAV pull whose cursor vouches for its
        // sweep, commit with the switch or the sweep, never before it.
        if pull.isStaging || (pull.sweep.isMarking && store.kind.reportsDeletions), let cursor = batch.cursor {
            pull.heldCursor = cursor
            batch.cursor = nil
        }
        switch pull.writing {
        case .staging(let problems):
            state = .pulling(pull)
            try write(url: batch.origin) { database throws(StoreError) in try database.stage(batch, for: store.name) }
            pull.writing = .staging(problems: problems + batch.problems)
        case .spooling(let spooled) where SpooledFirstSync.accepts(batch, maxRecordBytes: store.maxRecordBytes):
            state = .pulling(pull)
            let due: Bool
            do { due = try spooled.hold(batch) } catch {
                let failure = SyncError(error, store: store.name, url: batch.origin)
                fail(failure)
                throw failure
            }
            if due { try drain(spooled) }
        case .spooling(let spooled):
            // Held batches go first: a batch the merge may refuse records of meets the rows in
            // the remote's order.
            state = .pulling(pull)
            try drain(spooled)
            try merge(batch)
        case .merging:
            state = .pulling(pull)
            try merge(batch)
        }
        if case .pulling = state { state = .pulling(pull) }
        report.pages += batch.pageCount
        report.pagesUnchanged += batch.unchangedPages
        context.onAdvance(batch.changes.count, batch.pageCount, batch.totalHint)
    }

    func source(_ source: any RemoteSource, didList ids: [String]) throws {
        guard case .pulling(var pull) = state else { return }
        // Marks count the rows a pull merged: held batches are merged first, and the rest of
        // the pull merges as it goes.
        if let spooled = pull.spooled {
            try drain(spooled)
            spooled.close()
            pull.writing = .merging
            state = .pulling(pull)
        }
        let beginning = !pull.sweep.isMarking
        let rowsBefore = try write { database throws(StoreError) in
            var rows = pull.sweep.rowsBefore
            if beginning {
                // A kind that decides to list on its own (a refused sync token) lists before
                // it hands over anything: the rows now are the rows before the pull.
                if rows == nil { rows = try database.recordCount(of: store.name) }
                try database.beginReconciliation(of: store.name)
            }
            try database.markPresent(ids, in: store.name)
            return rows
        }
        pull.sweep = .marking(rowsBefore: rowsBefore)
        state = .pulling(pull)
        context.onAdvance(0, 0, nil)
    }

    func sourceRestartsListing(_ source: any RemoteSource) throws {
        guard case .pulling(let pull) = state, pull.sweep.isMarking else { return }
        // The marks so far came from a listing that moved: a record read in it may be gone
        // since. The listing read again marks afresh; the rows before the pull stay the measure
        // of max-delete-share.
        try write { database throws(StoreError) in try database.beginReconciliation(of: store.name) }
    }

    func source(_ source: any RemoteSource, didFinishWith outcome: SourceOutcome) {
        guard case .pulling(var pull) = state else { return }
        report.requests = outcome.requests
        report.unchanged = outcome.unchanged
        if let spooled = pull.spooled {
            do throws(SyncError) { try drain(spooled) } catch { return }
        }
        var gaps = outcome.gaps
        do {
            try context.database.write { database throws(StoreError) in
                try settle(&pull, outcome: outcome, gaps: &gaps, in: database)
            }
        } catch {
            return fail(SyncError(error, store: store.name))
        }
        report.gaps = gaps
        if case .refused(let wouldDelete, let total) = report.reconciliation {
            journal.refusedSweep(wouldDelete: wouldDelete, of: total, maxDeleteShare: store.maxDeleteShare)
        }
        finish(.success(report))
    }

    func source(_ source: any RemoteSource, didFailWith error: SyncError) {
        guard case .pulling = state else { return }
        fail(error)
    }

    /// Whether `cursor` holds one of `secrets` or a secret fetched at run time.
    static func carriesSecret(_ cursor: String, _ secrets: [Secret]) -> Bool {
        cursor.redactingSecrets(secrets) != cursor
    }

    // MARK: - The end of a pull

    /// The pull's last transaction: the sweep (or the rebuild's switch), the cursor, the gaps,
    /// the success and what the rows now come from, all at once.
    private func settle(_ pull: inout Pull, outcome: SourceOutcome, gaps: inout [ReplicaGap], in database: ReplicaDatabase) throws(StoreError) {
        var cursor = pull.heldCursor
        // Whether the rows now come from the configured source: always, unless a staged rebuild
        // did not switch.
        var rebuilt = !pull.isStaging
        if pull.plan.reconcile, outcome.listingComplete, !outcome.listingUnchanged, !pull.sweep.isMarking {
            // A complete listing that named no id: every live row is gone from the remote. The
            // sweep decides as for any listing (`max-delete-share` first); without marks there
            // would be no sweep at all, and the pass would say ok.
            try database.beginReconciliation(of: store.name)
            pull.sweep = .marking(rowsBefore: pull.sweep.rowsBefore)
        }
        if pull.sweep.isMarking {
            // The marks are gone once finished or cancelled, whatever follows.
            pull.sweep = .idle(rowsBefore: pull.sweep.rowsBefore)
            state = .pulling(pull)
            if outcome.listingComplete {
                // A rebuild a person asked for lets go of whatever the remote lacks.
                let share = context.resync ? 1 : store.maxDeleteShare
                let result: ReconcileOutcome
                if case .staging(let problems) = pull.writing {
                    switch try database.switchToRebuilt(store.name, problems: problems, maxDeleteShare: share,
                                                        rowsBefore: pull.sweep.rowsBefore, cursor: cursor) {
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
                    result = try database.finishReconciliation(of: store.name, maxDeleteShare: share, rowsBefore: pull.sweep.rowsBefore)
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
            // Every page as the last sweep listed it, and no row inserted or deleted since: the
            // listing names exactly the live rows, so nothing goes.
            precondition(pull.plan.listingAtRest && outcome.listingComplete, "a listing vouched unchanged that the plan did not vouch for")
            report.reconciliation = .swept(deleted: 0)
            report.listingUnchanged = true
            journal.logger.debug("store \(store.name): sweep: every page is as the last sweep listed it; nothing to delete")
        }
        if !rebuilt {
            // Nothing of the rebuild reached the rows: they stay as they were, and the next
            // pass rebuilds again.
            try database.discardStaged(of: store.name)
            cursor = nil
            if !gaps.contains(where: \.needsSweep) {
                gaps.append(.sweepSkipped(reason: "the rebuild's id listing did not complete; the rows stay as they were"))
            }
        }
        if pull.plan.reconcile, !outcome.listingComplete, !gaps.contains(where: \.needsSweep) {
            gaps.append(.sweepSkipped(reason: "the id listing did not complete"))
        }
        // Counted once here (only when a transaction changed the count), and stored, so the
        // state read next does not count again.
        report.recordCount = try database.liveRecordCount(of: store.name)
        let idless = report.counts.problems.count { $0.id == nil }
        // A push's create this pull should have read back and did not is missing as much as a
        // record it could not store.
        let pending = try database.syncState(of: store.name).map { $0.pendingRecords + $0.createsToReadBack } ?? 0
        if pending + idless > 0 {
            let sample = try database.pendingRecordIDs(of: store.name, limit: 3)
            gaps.append(.recordsSkipped(count: pending + idless, sample: sample, rereadAll: idless > 0 || !store.kind.fetchesByID))
        }
        if let cursor { try database.storeCursor(cursor, of: store.name) }
        gaps += try database.unpushedGaps(of: store, queued: &report.localQueued)
        let swept = if case .swept = report.reconciliation { true } else { false }
        if pull.plan.reconcile || pull.decision.fillsEmptyTable {
            try database.recordSweptListing(of: store.name, clean: (swept || pull.decision.fillsEmptyTable) && rebuilt && gaps.isEmpty)
        }
        try database.recordSuccess(of: store.name, at: Date(), counts: report.counts, gaps: gaps, swept: swept)
        // What the rows now come from; a rebuild whose sweep was refused is not over, and the
        // next pass rebuilds again.
        if rebuilt, !gaps.contains(where: { if case .sweepRefused = $0 { true } else { false } }) {
            try database.recordStoreIdentity(store.identity, of: store.name)
        }
    }

    /// Undoes what the pull set up on the shared connection, after `failure` ended it.
    private func stop(after failure: SyncError) {
        guard case .pulling(let pull) = state else {
            state = .done
            return
        }
        state = .done
        if let spooled = pull.spooled {
            // What a failing first sync fetched is merged, as merging batch by batch would have
            // kept it. A cancelled pull (a shutdown, a stall) merges it only when it is all in
            // memory, a second's work: a shutdown does not wait for runs on disk, which the
            // next pass fetches again.
            if failure.kind != .cancelled || spooled.isInMemory, spooled.mayDrain {
                do throws(SyncError) { try drain(spooled, finishing: true) } catch {
                    journal.logger.warning("store \(store.name): could not merge what the failed first sync fetched: \(error.redacting(store.secrets).description)")
                }
            }
            spooled.close()
        }
        context.database.write { database in
            if pull.sweep.isMarking { database.cancelReconciliation(of: store.name) }
            // A failed rebuild's records kept aside are not worth their disk space: the next
            // rebuild reads them again (and discards any left by a crash first).
            if pull.isStaging { try? database.discardStaged(of: store.name) }
            // Restoring the pragmas cannot fail in a way that would change the outcome.
            if pull.decision.bulk { try? database.setBulkMode(false) }
        }
    }

    /// Ends the pull with a success, or after a failure was cleaned up.
    private func finish(_ result: Result<PassReport, SyncError>) {
        guard let completion else { return }
        if case .pulling(let pull) = state, case .success = result, pull.decision.bulk {
            // A finished first sync hands the connection back as it found it.
            context.database.write { database in try? database.setBulkMode(false) }
        }
        state = .done
        self.completion = nil
        completion(result)
    }

    /// Cleans up after `failure` and ends the pull with it.
    private func fail(_ failure: SyncError) {
        guard completion != nil else { return }
        stop(after: failure)
        finish(.failure(failure))
    }

    // MARK: - Merging

    private func merge(_ batch: ChangeBatch) throws(SyncError) {
        let counts = try write(url: batch.origin) { database throws(StoreError) in try database.apply(batch, to: store.name) }
        noteApplied(counts, origin: batch.origin)
    }

    /// Counts what a merge did and journals its skipped records and conflicts.
    private func noteApplied(_ counts: MergeCounts, origin: String) {
        report.counts += counts
        for problem in counts.problems {
            journal.skipped(problem, origin: origin.redactingSecrets(store.secrets))
        }
        if counts.conflicts > 0 {
            journal.pulledConflicts(counts.conflicts, policy: store.writeBack.conflict)
        }
    }

    /// Runs a write for a sink call; a replica failure ends the pull and is rethrown, so the
    /// source stops.
    private func write<T>(url: String = "", _ body: (ReplicaDatabase) throws(StoreError) -> T) throws(SyncError) -> T {
        do {
            return try context.database.write(body)
        } catch {
            let failure = SyncError(error, store: store.name, url: url)
            fail(failure)
            throw failure
        }
    }

    /// Merges a first sync's held batches, a chunk per transaction, each under the shared lock
    /// on its own, so other stores' passes interleave with a long drain. A failure ends the
    /// pull, unless the pull is already `finishing` after one.
    private func drain(_ spooled: SpooledFirstSync, finishing: Bool = false) throws(SyncError) {
        guard !spooled.isEmpty else { return }
        let held = spooled.heldRecords
        let large = !spooled.isInMemory
        let start = ContinuousClock.now
        defer {
            // A large first sync's table fills at its drains: say when, for whoever watches it.
            let text = "store \(store.name): merged \(held) fetched records in id order in \(String(format: "%.1f", (ContinuousClock.now - start).seconds)) s"
            if large { journal.logger.info("\(text)") } else { journal.logger.debug("\(text)") }
        }
        do throws(SyncError) {
            try spooled.drain { batch throws(SyncError) in
                let counts: MergeCounts
                do throws(StoreError) {
                    counts = try context.database.write { database throws(StoreError) in try database.apply(batch, to: store.name) }
                } catch {
                    throw SyncError(error, store: store.name, url: batch.origin)
                }
                noteApplied(counts, origin: batch.origin)
                context.onAdvance(0, 0, nil)
            }
        } catch {
            if !finishing { fail(error) }
            throw error
        }
    }
}
