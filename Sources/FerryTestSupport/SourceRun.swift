import FerryKit
import Foundation
import Logging

/// Runs one pass of a store's ``RemoteSource`` on a run-loop operation's own loop (the source
/// and its session are created there, as in a real pass) into a ``CollectingSink``, and
/// returns what the sink saw.
///
///     let pass = try SourceRun(store: store, plan: PassPlan(cursor: nil, reconcile: false)).runToCompletion()
///     #expect(pass.offLoopCalls == 0 && pass.callsAfterEnd == 0)
public final class SourceRun: RunLoopOperation<CollectedPass, any Error>, @unchecked Sendable {
    public typealias Factory = (RemoteSourceContext) throws(SyncError) -> any RemoteSource

    /// How long the run stays on the loop after the pass ended, so a stray late sink call
    /// would still be counted.
    public static let quietPeriod: TimeInterval = 0.1

    private let store: StoreConfiguration
    private let plan: PassPlan
    private let factory: Factory
    private let configure: (CollectingSink, any RemoteSource) -> Void
    /// Cancel the source after this many batches.
    public var cancelAfterBatches: Int?
    /// Make the sink throw after this many batches.
    public var failAfterBatches: Int?
    private var source: (any RemoteSource)?
    private var sink: CollectingSink?

    /// `configure` runs on the pass's loop before the source starts (sink knobs, source
    /// settings); `factory` defaults to what a pass does: the store's options make the source.
    public init(store: StoreConfiguration, plan: PassPlan,
                configure: @escaping (CollectingSink, any RemoteSource) -> Void = { _, _ in },
                factory: @escaping Factory = { context throws(SyncError) in try context.store.options.value.makeSource(context) }) {
        self.store = store
        self.plan = plan
        self.factory = factory
        self.configure = configure
        super.init(cancelled: .failure(CancellationError()))
    }

    public override func run() {
        let sink = CollectingSink(loop: RunLoopHandle.current())
        self.sink = sink
        sink.failAfterBatches = failAfterBatches
        sink.onEnd = { [unowned self] in self.finishAfterQuietPeriod() }
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
        if let limit = cancelAfterBatches {
            sink.afterBatch = { [unowned self] count in
                guard count == limit else { return }
                self.cancelSource()
            }
        }
        configure(sink, source)
        source.start(plan, sink: sink)
    }

    /// Cancels the source from its loop (as the daemon would) and ends the pass.
    public func cancelSource() {
        source?.cancel()
        sink?.markEnded()
    }

    private func finishAfterQuietPeriod() {
        // Fields of a class, not a tuple: Swift 6.3.1 miscompiled `let (a, b) = box.value` in a
        // timer closure (it released elements it only borrowed, a double free on the next tick).
        let box = RunBox(run: self)
        _ = Timer.scheduledTimer(withTimeInterval: Self.quietPeriod, repeats: false) { _ in
            guard let run = box.run, let pass = run.sink?.pass else { return }
            run.finish(.success(pass))
        }
    }

    public override func cancelRun() {
        source?.cancel()
        super.cancelRun()
    }

    /// Runs the pass on a queue and waits for it.
    public func runToCompletion() throws -> CollectedPass {
        let queue = OperationQueue()
        queue.addOperations([self], waitUntilFinished: true)
        return try output()
    }
}

/// Carries the run into its own loop's timer (where alone it is touched).
private final class RunBox: @unchecked Sendable {
    weak var run: SourceRun?
    init(run: SourceRun) { self.run = run }
}
