import Logging

/// What a pass tells the journal: one line per event, each naming its store in the text (so
/// plain `journalctl -u ferryd` tells stores apart) and carrying the structured fields and
/// `MESSAGE_ID` that `journalctl FERRY_STORE=... MESSAGE_ID=...` select on.
struct PassJournal {
    private(set) var logger: Logger
    let store: String

    init(logger: Logger, store: String, pass: Int) {
        var logger = logger
        logger[metadataKey: "store"] = "\(store)"
        logger[metadataKey: "pass"] = "\(pass)"
        self.logger = logger
        self.store = store
    }

    func started(trigger: PassTrigger, plan: PassPlan) {
        logger.info("store \(store): pass started (\(trigger.rawValue)\(plan.cursor == nil ? ", full sync" : "")\(plan.reconcile ? ", reconciling" : ""))", metadata: [
            MessageID.metadataKey: "\(MessageID.passStarted.rawValue)",
            "trigger": "\(trigger.rawValue)",
            "full_sync": "\(plan.cursor == nil)",
            "reconcile": "\(plan.reconcile)",
        ])
    }

    func skipped(_ problem: RecordProblem, origin: String) {
        logger.warning("store \(store): skipped a bad record: \(problem)", metadata: ["url": "\(origin)"])
    }

    func refusedSweep(wouldDelete: Int, of total: Int, maxDeleteShare: Double) {
        logger.warning("store \(store): refused to delete \(wouldDelete) of \(total) records: more than max-delete-share \(Int(maxDeleteShare * 100))% (if the remote really lost them, raise it or run ferry resync \(store))", metadata: [
            MessageID.metadataKey: "\(MessageID.reconcileRefused.rawValue)",
        ])
    }

    func finished(_ report: PassReport) {
        if let gaps = ReplicaGap.summary(report.gaps) {
            logger.warning("store \(store): replica incomplete: \(gaps)", metadata: [
                MessageID.metadataKey: "\(MessageID.passIncomplete.rawValue)",
                "gaps": "\(report.gaps.count)",
            ])
        }
        logger.info("pass finished: \(report.summary)", metadata: [
            MessageID.metadataKey: "\(MessageID.passFinished.rawValue)",
            "inserted": "\(report.counts.inserted)",
            "updated": "\(report.counts.updated)",
            "deleted": "\(report.counts.deleted)",
            "skipped": "\(report.counts.skipped)",
            "records": "\(report.recordCount)",
            "pages": "\(report.pages)",
            "duration_ms": "\(Int(report.duration.seconds * 1000))",
        ])
    }

    /// How the pass ended: finished, cancelled or failed, each as the journal words it.
    func ended(_ result: Result<PassReport, SyncError>, afterPages pages: Int) {
        switch result {
        case .success(let report): finished(report)
        case .failure(let failure) where failure.kind == .cancelled: cancelled(afterPages: pages)
        // Not the store's failure: another process is syncing it, which the wait for it said
        // at notice level, ferryd's scheduler says with its next try, and `ferry sync` prints
        // as its error line: one line per retry, not two.
        case .failure(let failure) where failure.kind == .busy: break
        case .failure(let failure): failed(failure, afterPages: pages)
        }
    }

    func cancelled(afterPages pages: Int) {
        logger.notice("store \(store): pass cancelled after \(pages) page\(pages == 1 ? "" : "s")")
    }

    func failed(_ error: SyncError, afterPages pages: Int) {
        var metadata: Logger.Metadata = [
            MessageID.metadataKey: "\(MessageID.passFailed.rawValue)",
            "error_kind": "\(error.kind.fieldValue)",
            "pages": "\(pages)",
        ]
        // The whole URL for whoever reads the fields; the message shortens it.
        if !error.url.isEmpty { metadata["url"] = "\(error.url)" }
        logger.error("pass failed: \(error)", metadata: metadata)
    }

    func pushStarted(_ count: Int) {
        logger.info("store \(store): pushing \(count) local change\(count == 1 ? "" : "s")", metadata: ["local_changes": "\(count)"])
    }

    func pushFinished(_ counts: PushCounts) {
        logger.info("store \(store): push finished: \(counts.summary), \(counts.requests) requests", metadata: [
            "pushed": "\(counts.pushed)", "push_conflicts": "\(counts.conflicts)", "push_refused": "\(counts.refused)",
        ])
    }

    func pushRefused(_ change: LocalChange, reason: String) {
        logger.warning("store \(store): the remote refused the local \(change.operation.word) of \(change.id.debugDescription): \(reason); it stays queued as refused", metadata: [
            MessageID.metadataKey: "\(MessageID.pushRefused.rawValue)",
            "record": "\(change.id)",
        ])
    }

    /// Remote changes a pull found on records with a queued local change.
    func pulledConflicts(_ count: Int, policy: ConflictPolicy) {
        logger.warning("store \(store): \(count) record\(count == 1 ? "" : "s") changed on the remote while changed locally; conflict = \(policy.rawValue), both versions are in ferry_conflicts", metadata: [
            MessageID.metadataKey: "\(MessageID.conflictRecorded.rawValue)",
            "conflicts": "\(count)",
        ])
    }

    func conflict(_ change: LocalChange, resolution: ConflictPlan.Resolution, policy: ConflictPolicy) {
        let outcome = switch resolution {
        case .hold: "held until resolved (ferry conflicts)"
        case .takeRemote: "the remote version was kept; the local one is in ferry_conflicts"
        case .rebaseLocal: "the local version will be pushed over it"
        case .keepBoth: "both kept; the local version is queued as a new record"
        }
        logger.warning("store \(store): conflict on \(change.id.debugDescription): changed locally and on the remote; conflict = \(policy.rawValue): \(outcome)", metadata: [
            MessageID.metadataKey: "\(MessageID.conflictRecorded.rawValue)",
            "record": "\(change.id)",
            "resolution": "\(resolution.rawValue)",
        ])
    }
}

extension LocalOperation: CustomStringConvertible {
    public var description: String { word }

    /// The operation in a sentence's words.
    var word: String {
        switch self {
        case .create: "insert"
        case .update: "update"
        case .delete: "delete"
        }
    }
}
