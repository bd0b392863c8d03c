import FerryKit
import Foundation

/// What a ``CollectingSink`` received during one pass.
public struct CollectedPass: Sendable {
    public var batches: [ChangeBatch] = []
    public var listed: [String] = []
    public var listCalls = 0
    public var outcome: SourceOutcome?
    public var error: SyncError?
    /// Sink calls that arrived off the pass's run loop: must stay 0.
    public var offLoopCalls = 0
    /// Sink calls after the pass ended (finish, failure, a throwing sink, or the source was
    /// cancelled): must stay 0.
    public var callsAfterEnd = 0
    /// "batch", "list", "finish", "fail", in order.
    public var events: [String] = []

    public init() {}

    /// Every change of the pass, in order.
    public var changes: [RecordChange] { batches.flatMap(\.changes) }

    /// Every upserted record, in order (a record handed over twice is here twice).
    public var records: [RemoteRecord] {
        changes.compactMap { if case .upsert(let record) = $0 { record } else { nil } }
    }

    /// Every upsert of the pass, by id (a later batch wins).
    public var upserts: [String: RemoteRecord] {
        Dictionary(records.map { ($0.id, $0) }, uniquingKeysWith: { _, later in later })
    }

    /// Upserts handed over, counting a record handed over twice twice.
    public var upsertCount: Int { records.count }

    /// Every delete of the pass.
    public var deletes: [String] {
        changes.compactMap { if case .delete(let id) = $0 { id } else { nil } }
    }

    public var problems: [RecordProblem] { batches.flatMap(\.problems) }

    /// The cursor a merge engine would hold after the pass: the last non-nil batch cursor.
    public var finalCursor: String? { batches.compactMap(\.cursor).last }
}

/// A ``RemoteSourceSink`` that records everything and checks each call arrives on the loop of
/// the pass (``SourceRun``) and none after the pass ended.
public final class CollectingSink: RemoteSourceSink {
    public private(set) var pass = CollectedPass()
    private let loop: RunLoopHandle
    private var ended = false
    /// Throw from didProduce once this many batches arrived (a failing merge).
    public var failAfterBatches: Int?
    /// Called after each batch is recorded (to cancel mid-pass, change the server...).
    public var afterBatch: ((Int) -> Void)?
    /// Called once, when the pass ends (finish, failure, a throw, or ``markEnded()``).
    public var onEnd: (() -> Void)?

    public init(loop: RunLoopHandle) {
        self.loop = loop
    }

    private func check(_ event: String) {
        if !loop.isCurrent { pass.offLoopCalls += 1 }
        if ended { pass.callsAfterEnd += 1 }
        pass.events.append(event)
    }

    /// The pass is over from the sink's side (the source was cancelled); later calls count as
    /// defects.
    public func markEnded() {
        guard !ended else { return }
        ended = true
        onEnd?()
    }

    public func source(_ source: any RemoteSource, didProduce batch: ChangeBatch) throws {
        check("batch")
        pass.batches.append(batch)
        if let limit = failAfterBatches, pass.batches.count >= limit {
            markEnded()
            throw SinkFailure()
        }
        afterBatch?(pass.batches.count)
    }

    public func source(_ source: any RemoteSource, didList ids: [String]) throws {
        check("list")
        pass.listCalls += 1
        pass.listed += ids
    }

    public func source(_ source: any RemoteSource, didFinishWith outcome: SourceOutcome) {
        check("finish")
        pass.outcome = outcome
        markEnded()
    }

    public func source(_ source: any RemoteSource, didFailWith error: SyncError) {
        check("fail")
        pass.error = error
        markEnded()
    }
}

/// What a ``CollectingSink`` throws to fail the pass it is merging.
public struct SinkFailure: Error {}
