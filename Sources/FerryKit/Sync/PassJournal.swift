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
        logger.warning("store \(store): refused to delete \(wouldDelete) of \(total) records: more than max-delete-share \(Int(maxDeleteShare * 100))% (raise it if the remote really lost them)", metadata: [
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

    func cancelled(afterPages pages: Int) {
        logger.notice("store \(store): pass cancelled after \(pages) pages")
    }

    func failed(_ error: SyncError, afterPages pages: Int) {
        var metadata: Logger.Metadata = [
            MessageID.metadataKey: "\(MessageID.passFailed.rawValue)",
            "error_kind": "\(error.kind)",
            "pages": "\(pages)",
        ]
        // The whole URL for whoever reads the fields; the message shortens it.
        if !error.url.isEmpty { metadata["url"] = "\(error.url)" }
        logger.error("pass failed: \(error)", metadata: metadata)
    }
}
