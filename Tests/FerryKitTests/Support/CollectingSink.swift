import Foundation
@testable import FerryKit

/// What a ``CollectingSink`` received during one pass.
struct CollectedPass: Sendable {
    var batches: [ChangeBatch] = []
    var listed: [String] = []
    var listCalls = 0
    var outcome: SourceOutcome?
    var error: SyncError?
    /// Sink calls that arrived off the pass's run loop: must stay 0.
    var offLoopCalls = 0
    /// Sink calls after the pass ended (finish, failure, or the source was cancelled): must stay 0.
    var callsAfterEnd = 0
    /// "batch", "list", "finish", "fail", in order.
    var events: [String] = []

    /// Every upsert of the pass, by id (a later batch wins).
    var upserts: [String: RemoteRecord] {
        var result: [String: RemoteRecord] = [:]
        for batch in batches {
            for case .upsert(let record) in batch.changes { result[record.id] = record }
        }
        return result
    }

    /// Upserts handed over, counting a record handed over twice twice.
    var upsertCount: Int {
        batches.reduce(0) { count, batch in
            count + batch.changes.count { if case .upsert = $0 { true } else { false } }
        }
    }

    /// Every delete of the pass.
    var deletes: [String] {
        batches.flatMap { $0.changes.compactMap { if case .delete(let id) = $0 { id } else { nil } } }
    }

    var problems: [RecordProblem] { batches.flatMap(\.problems) }

    /// The cursor a merge engine would hold after the pass: the last non-nil batch cursor.
    var finalCursor: String? { batches.compactMap(\.cursor).last }
}

/// A ``RemoteSourceSink`` that records everything and checks each call arrives on the loop of
/// the pass (``SourceRun``).
final class CollectingSink: RemoteSourceSink {
    private(set) var pass = CollectedPass()
    private let loop: RunLoopHandle
    private var ended = false
    /// Throw from didProduce after this many batches (a failing merge).
    var failAfterBatches: Int?
    /// Called after each batch (to cancel mid-pass).
    var afterBatch: ((Int) -> Void)?
    var onEnd: (() -> Void)?

    init(loop: RunLoopHandle) {
        self.loop = loop
    }

    private func check(_ event: String) {
        if !loop.isCurrent { pass.offLoopCalls += 1 }
        if ended { pass.callsAfterEnd += 1 }
        pass.events.append(event)
    }

    /// Marks the pass as over from the test's side (after cancel()).
    func markEnded() {
        ended = true
    }

    func source(_ source: any RemoteSource, didProduce batch: ChangeBatch) throws {
        check("batch")
        pass.batches.append(batch)
        if let limit = failAfterBatches, pass.batches.count >= limit {
            ended = true
            throw SinkFailure()
        }
        afterBatch?(pass.batches.count)
    }

    func source(_ source: any RemoteSource, didList ids: [String]) throws {
        check("list")
        pass.listCalls += 1
        pass.listed += ids
    }

    func source(_ source: any RemoteSource, didFinishWith outcome: SourceOutcome) {
        check("finish")
        pass.outcome = outcome
        ended = true
        onEnd?()
    }

    func source(_ source: any RemoteSource, didFailWith error: SyncError) {
        check("fail")
        pass.error = error
        ended = true
        onEnd?()
    }
}

struct SinkFailure: Error {}
