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

    /// `factory` defaults to what a pass does: the store's options make the source.
    init(store: StoreConfiguration, plan: PassPlan, factory: @escaping Factory = { context throws(SyncError) in
        try context.store.options.value.makeSource(context)
    }) {
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

    /// What the quiet-finish timer uses, all on this loop.
    private struct QuietFinish {
        let sink: CollectingSink
        let condition: () -> Bool
        let run: SourceRun
    }

    /// Finishes after a quiet period, so that any stray sink call would still be recorded.
    private func scheduleQuietFinish(after seconds: TimeInterval, sink: CollectingSink, onlyIf condition: @escaping () -> Bool) {
        // Fields, not a tuple: Swift 6.3.1 miscompiles `let (a, b, c) = box.value` in this
        // closure (SILGen releases the elements it only borrowed; the ownership verifier
        // reports it once anything else in the closure uses them), so every tick of this
        // repeating timer over-released the sink, and a pass long enough for two ticks
        // crashed the test run in a double deallocation.
        let box = UncheckedSendableBox(QuietFinish(sink: sink, condition: condition, run: self))
        _ = Timer.scheduledTimer(withTimeInterval: seconds, repeats: true) { timer in
            let quiet = box.value
            if quiet.condition() {
                timer.invalidate()
                quiet.run.finish(.success(quiet.sink.pass))
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
