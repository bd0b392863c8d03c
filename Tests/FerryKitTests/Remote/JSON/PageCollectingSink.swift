import Foundation
@testable import FerryKit

/// Everything a source handed over during one pass.
struct CollectedPages: Sendable {
    var batches: [ChangeBatch] = []
    var listed: [String] = []
    var outcome: SourceOutcome?
    var error: SyncError?
    /// Sink calls that arrived off the pass's run loop: must stay 0.
    var offLoopCalls = 0
    /// Sink calls after the pass ended (finish, failure, a throwing sink, or cancel): must stay 0.
    var callsAfterEnd = 0

    var changes: [RecordChange] { batches.flatMap(\.changes) }
    var records: [RemoteRecord] {
        changes.compactMap { if case .upsert(let record) = $0 { record } else { nil } }
    }
    var problems: [RecordProblem] { batches.flatMap(\.problems) }
    /// The cursor a merge engine would have stored after the pass.
    var lastCursor: String? { batches.compactMap(\.cursor).last }
}

/// A RemoteSourceSink for tests: records every call and checks it arrives on the pass's loop.
final class PageCollectingSink: RemoteSourceSink {
    private(set) var pass = CollectedPages()
    private let loop: RunLoopHandle
    private var ended = false
    /// Throw from didProduce on this batch (1-based): a merge that failed.
    var failOnBatch: Int?
    /// Called after each batch is recorded (to cancel mid-pass, mutate the server...).
    var afterBatch: ((Int) -> Void)?
    var onEnd: (() -> Void)?

    init(loop: RunLoopHandle) {
        self.loop = loop
    }

    private func note() {
        if !loop.isCurrent { pass.offLoopCalls += 1 }
        if ended { pass.callsAfterEnd += 1 }
    }

    func source(_ source: any RemoteSource, didProduce batch: ChangeBatch) throws {
        note()
        pass.batches.append(batch)
        if failOnBatch == pass.batches.count {
            end()
            throw CancellationError()
        }
        afterBatch?(pass.batches.count)
    }

    func source(_ source: any RemoteSource, didList ids: [String]) throws {
        note()
        pass.listed += ids
    }

    func source(_ source: any RemoteSource, didFinishWith outcome: SourceOutcome) {
        note()
        pass.outcome = outcome
        end()
    }

    func source(_ source: any RemoteSource, didFailWith error: SyncError) {
        note()
        pass.error = error
        end()
    }

    /// The pass is over from the sink's point of view; later calls are counted as defects.
    func end() {
        guard !ended else { return }
        ended = true
        onEnd?()
    }
}

/// Runs one source pass on its own run loop (as the daemon's pass operation will) and returns
/// what the sink collected. The source is created on the operation's thread.
final class SourcePassOperation: RunLoopOperation<CollectedPages>, @unchecked Sendable {
    private let makeSource: () throws(SyncError) -> any RemoteSource
    private let plan: PassPlan
    private let configure: (PageCollectingSink, any RemoteSource) -> Void
    private var source: (any RemoteSource)?
    private var sink: PageCollectingSink?

    init(plan: PassPlan, configure: @escaping (PageCollectingSink, any RemoteSource) -> Void = { _, _ in },
         source makeSource: @escaping () throws(SyncError) -> any RemoteSource) {
        self.makeSource = makeSource
        self.plan = plan
        self.configure = configure
        super.init()
    }

    override func run() {
        let sink = PageCollectingSink(loop: runLoopHandle!)
        self.sink = sink
        do {
            let source = try makeSource()
            self.source = source
            sink.onEnd = { [unowned self] in
                // Stay a moment on the loop so a stray late call would be seen.
                _ = Timer.scheduledTimer(withTimeInterval: 0.2, repeats: false) { [unowned self] _ in
                    self.finish(.success(self.sink!.pass))
                }
            }
            configure(sink, source)
            source.start(plan, sink: sink)
        } catch {
            var pass = CollectedPages()
            pass.error = error
            finish(.success(pass))
        }
    }

    /// Cancels the source from the loop (as the daemon would) and ends the pass.
    func cancelSource() {
        source?.cancel()
        sink?.end()
    }

    override func cancelRun() {
        source?.cancel()
        super.cancelRun()
    }

    /// Runs the pass and waits for it.
    static func run(_ plan: PassPlan, configure: @escaping (PageCollectingSink, any RemoteSource) -> Void = { _, _ in },
                    source: @escaping () throws(SyncError) -> any RemoteSource) throws -> CollectedPages {
        let operation = SourcePassOperation(plan: plan, configure: configure, source: source)
        let queue = OperationQueue()
        queue.addOperations([operation], waitUntilFinished: true)
        return try operation.output()
    }
}
