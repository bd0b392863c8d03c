import Foundation
import Logging
@testable import FerryKit

/// Runs one pass of a ``RemoteSource`` on a ``RunLoopOperation``'s own loop (the source and its
/// session are created there) into a ``CollectingSink``, and returns what the sink saw.
final class SourceRun: RunLoopOperation<CollectedPass>, @unchecked Sendable {
    typealias Factory = (RemoteSourceContext) throws(SyncError) -> any RemoteSource

    private let store: StoreConfiguration
    private let plan: PassPlan
    private let factory: Factory
    /// Cancel the source after this many batches; the run then waits a moment for stray calls.
    var cancelAfterBatches: Int?
    /// Make the sink throw after this many batches; the run then waits a moment for stray calls.
    var failAfterBatches: Int?
    private var source: (any RemoteSource)?
    private var sink: CollectingSink?

    init(store: StoreConfiguration, plan: PassPlan, factory: @escaping Factory) {
        self.store = store
        self.plan = plan
        self.factory = factory
        super.init()
    }

    override func run() {
        let sink = CollectingSink(loop: RunLoopHandle.current())
        self.sink = sink
        sink.failAfterBatches = failAfterBatches
        sink.onEnd = { [unowned self] in self.finish(.success(sink.pass)) }
        let source: any RemoteSource
        do {
            source = try factory(RemoteSourceContext(store: store, logger: Logger(label: "ferry.test.\(store.name)")))
        } catch {
            var pass = sink.pass
            pass.error = error
            finish(.success(pass))
            return
        }
        self.source = source
        if let failAfterBatches {
            scheduleQuietFinish(after: 1.0, sink: sink, onlyIf: { sink.pass.batches.count >= failAfterBatches })
        }
        if let limit = cancelAfterBatches {
            sink.afterBatch = { [unowned self] count in
                guard count == limit else { return }
                source.cancel()
                sink.markEnded()
                self.scheduleQuietFinish(after: 0.5, sink: sink, onlyIf: { true })
            }
        }
        source.start(plan, sink: sink)
    }

    /// Finishes after a quiet period, so that any stray sink call would still be recorded.
    private func scheduleQuietFinish(after seconds: TimeInterval, sink: CollectingSink, onlyIf condition: @escaping () -> Bool) {
        let box = UncheckedSendableBox((sink, condition, self))
        _ = Timer.scheduledTimer(withTimeInterval: seconds, repeats: true) { timer in
            let (sink, condition, run) = box.value
            if condition() {
                timer.invalidate()
                run.finish(.success(sink.pass))
            }
        }
    }

    override func cancelRun() {
        source?.cancel()
        super.cancelRun()
    }

    /// Runs the pass on a queue and waits for it.
    func runToCompletion() throws -> CollectedPass {
        let queue = OperationQueue()
        queue.addOperations([self], waitUntilFinished: true)
        return try output()
    }
}
