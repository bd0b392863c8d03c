import Foundation
import Logging
import Synchronization

/// One sync pass of one store: a run-loop operation that drives the store's ``RemoteSource``
/// on its own thread and merges every batch into the replica as it arrives.
///
/// Each batch commits with its cursor in one transaction, so a pass interrupted at any
/// instant (cancel, SIGKILL, a full disk) leaves the replica at the last committed batch, and
/// the next pass resumes from there. The source starts fetching page N+1 before it hands over
/// page N, so the network and the merge overlap.
public final class SyncPassOperation: RunLoopOperation<PassReport>, RemoteSourceSink, @unchecked Sendable {
    /// Everything a pass needs; the scheduler builds it from the running configuration.
    public struct Setup: Sendable {
        public var store: StoreConfiguration
        public var database: SharedDatabase
        public var trigger: PassTrigger
        /// Also sweep records deleted remotely (for kinds that do not report deletions).
        public var reconcile: Bool
        public var pass: Int
        public var logger: Logger

        public init(store: StoreConfiguration, database: SharedDatabase, trigger: PassTrigger, reconcile: Bool, pass: Int, logger: Logger) {
            self.store = store
            self.database = database
            self.trigger = trigger
            self.reconcile = reconcile
            self.pass = pass
            self.logger = logger
        }
    }

    private enum State {
        case idle
        case syncing(any RemoteSource)
        case done
    }

    public let setup: Setup
    private var logger: Logger
    // Touched only on the operation's thread.
    private var state = State.idle
    private var report: PassReport
    private var listing = false
    private var started = ContinuousClock.now
    private var bulk = false

    public init(_ setup: Setup) {
        self.setup = setup
        var logger = setup.logger
        logger[metadataKey: "store"] = "\(setup.store.name)"
        logger[metadataKey: "pass"] = "\(setup.pass)"
        self.logger = logger
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
        let store = setup.store
        let plan: PassPlan
        do {
            plan = try setup.database.write { database in
                try database.prepare(StoreDefinition(store))
                try database.recordAttempt(of: store.name, at: Date())
                let cursor = try database.syncState(of: store.name)?.cursor
                if cursor == nil {
                    // A first sync writes the whole store: tune the connection for it.
                    try database.setBulkMode(true)
                    bulk = true
                }
                // An empty store has nothing to sweep: a first sync skips reconciliation, whose
                // listing of every id would cost about as much as the sync itself.
                let reconcile = try setup.reconcile && !store.kind.reportsDeletions && database.hasRecords(in: store.name)
                return PassPlan(cursor: cursor, reconcile: reconcile)
            }
        } catch {
            fail(SyncError(.store, store: store.name, message: "\(error)"))
            return
        }
        report.wasFullSync = plan.cursor == nil
        logger.info("pass started", metadata: [
            "message_id": "\(MessageID.passStarted.rawValue)",
            "trigger": "\(setup.trigger.rawValue)",
            "full_sync": "\(plan.cursor == nil)",
            "reconcile": "\(plan.reconcile)",
        ])
        do {
            let source = try store.options.value.makeSource(RemoteSourceContext(store: store, logger: logger))
            state = .syncing(source)
            source.start(plan, sink: self)
        } catch {
            fail(error)
        }
    }

    public override func cancelRun() {
        if case .syncing(let source) = state {
            source.cancel()
        }
        fail(SyncError(.cancelled, store: setup.store.name, message: "pass cancelled"))
    }

    // MARK: - RemoteSourceSink

    public func source(_ source: any RemoteSource, didProduce batch: ChangeBatch) throws {
        guard case .syncing = state else { return }
        let store = setup.store.name
        let counts = try write(url: batch.origin) { try $0.apply(batch, to: store) }
        report.counts += counts
        report.pages += batch.pageCount
        for problem in counts.problems {
            logger.warning("skipped a bad record: \(problem)", metadata: ["url": "\(batch.origin)"])
        }
        updateProgress { progress in
            progress.completedUnits += Int64(batch.changes.count)
            progress.completedPages += batch.pageCount
            if let total = batch.totalHint { progress.totalUnits = total }
            progress.lastAdvance = .now
        }
    }

    public func source(_ source: any RemoteSource, didList ids: [String]) throws {
        guard case .syncing = state else { return }
        let store = setup.store.name
        let beginning = !listing
        try write { database in
            if beginning {
                try database.beginReconciliation(of: store)
            }
            try database.markPresent(ids, in: store)
        }
        listing = true
        updateProgress { $0.lastAdvance = .now }
    }

    public func source(_ source: any RemoteSource, didFinishWith outcome: SourceOutcome) {
        guard case .syncing = state else { return }
        let store = setup.store
        report.requests = outcome.requests
        report.unchanged = outcome.unchanged
        do {
            try setup.database.write { database in
                if listing {
                    if outcome.listingComplete {
                        let result = try database.finishReconciliation(of: store.name, maxDeleteShare: store.maxDeleteShare)
                        report.reconciliation = result
                        if case .swept(let deleted) = result {
                            report.counts.deleted += deleted
                        }
                    } else {
                        database.cancelReconciliation(of: store.name)
                    }
                    listing = false
                }
                try database.recordSuccess(of: store.name, at: Date(), counts: report.counts)
                report.recordCount = try database.recordCount(of: store.name)
                if bulk {
                    try database.setBulkMode(false)
                    bulk = false
                }
            }
        } catch {
            fail(SyncError(.store, store: store.name, message: "\(error)"))
            return
        }
        if case .refused(let wouldDelete, let total) = report.reconciliation {
            logger.warning("refused to delete \(wouldDelete) of \(total) records: more than max-delete-share \(Int(store.maxDeleteShare * 100))% (raise it if the remote really lost them)", metadata: [
                "message_id": "\(MessageID.reconcileRefused.rawValue)",
            ])
        }
        report.duration = .now - started
        state = .done
        logger.info("pass finished: \(report.summary)", metadata: [
            "message_id": "\(MessageID.passFinished.rawValue)",
            "inserted": "\(report.counts.inserted)",
            "updated": "\(report.counts.updated)",
            "deleted": "\(report.counts.deleted)",
            "skipped": "\(report.counts.skipped)",
            "records": "\(report.recordCount)",
            "pages": "\(report.pages)",
            "duration_ms": "\(Int(report.duration.seconds * 1000))",
        ])
        finish(.success(report))
    }

    public func source(_ source: any RemoteSource, didFailWith error: SyncError) {
        guard case .syncing = state else { return }
        fail(error)
    }

    /// Runs a write for a sink call; a store failure fails the pass and is rethrown, so the
    /// source stops.
    private func write<T>(url: String = "", _ body: (ReplicaDatabase) throws -> T) throws -> T {
        do {
            return try setup.database.write(body)
        } catch {
            let failure = SyncError(.store, store: setup.store.name, url: url, message: "\(error)")
            fail(failure)
            throw failure
        }
    }

    // MARK: - Failure

    /// Records the failure, leaves the replica at its last committed batch, and finishes.
    private func fail(_ error: any Error) {
        if case .done = state { return }
        state = .done
        let store = setup.store.name
        let failure = error as? SyncError ?? SyncError(.configuration, store: store, message: "\(error)")
        setup.database.write { database in
            if listing {
                database.cancelReconciliation(of: store)
                listing = false
            }
            if bulk {
                try? database.setBulkMode(false)
                bulk = false
            }
            if failure.kind != .cancelled {
                // A failure to record the failure (a full disk) must not hide the first error.
                try? database.recordFailure(of: store, at: Date(), message: failure.description)
            }
        }
        if failure.kind == .cancelled {
            logger.notice("pass cancelled after \(report.pages) pages")
        } else {
            logger.error("pass failed: \(failure)", metadata: [
                "message_id": "\(MessageID.passFailed.rawValue)",
                "error_kind": "\(failure.kind)",
                "pages": "\(report.pages)",
            ])
        }
        finish(.failure(failure))
    }
}
