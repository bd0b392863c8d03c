import Foundation
import Synchronization

/// An `Operation` whose work finishes asynchronously and hands a typed result to its dependents:
/// its output, or a failure of its own `Failure` type (a pass's ``SyncError``), so no reader
/// casts an erased error back or invents a fallback for one it did not expect.
///
/// Subclasses override ``execute()`` and eventually call ``finish(_:)`` exactly once (later calls
/// are ignored, so a completion racing a cancellation is harmless). A dependent reads the
/// producer's ``result`` instead of capturing it unowned in a completion block:
///
///     let fetch = FetchPageOperation(request)
///     let merge = MergeOperation(input: fetch)   // merge.addDependency(fetch) inside
///     // in merge.execute(): let page = try input.output()
///
/// The state machine is `ready → executing → finished`, or `ready → finished` when the operation
/// was cancelled before it started; then it ends with the outcome it was made with
/// (`cancelled:`), which is also what the default ``cancelExecution()`` ends with. Any other
/// transition is a bug in Ferry and traps.
///
/// swift-corelibs-foundation learns of state changes only through `didChangeValue(forKey:)`
/// sent *after* the getter already returns the new value (`willChangeValue` is a no-op there);
/// this class sends them outside its lock, because the queue calls back into the getters.
open class AsyncOperation<Output: Sendable, Failure: Error>: Operation, @unchecked Sendable {
    private enum State {
        case ready
        case executing
        case finished(Result<Output, Failure>)
    }

    private let state = Mutex<State>(.ready)
    private let progressState = Mutex(OperationProgress())
    private let beganAt = Mutex<ContinuousClock.Instant?>(nil)

    /// What a cancelled operation ends with, when it ends without an outcome of its own.
    public let cancelledOutcome: Result<Output, Failure>

    /// - Parameter cancelled: the outcome when cancelled before it began, or by the default
    ///   ``cancelExecution()`` (a pass's `SyncError(.cancelled, ...)`; a producer whose
    ///   consumer stopped it may count that a success).
    public init(cancelled: Result<Output, Failure>) {
        cancelledOutcome = cancelled
        super.init()
    }

    public final override var isAsynchronous: Bool { true }

    public final override var isExecuting: Bool {
        state.withLock { if case .executing = $0 { true } else { false } }
    }

    public final override var isFinished: Bool {
        state.withLock { if case .finished = $0 { true } else { false } }
    }

    /// The outcome once finished: the output, or the failure that ended the operation
    /// (``cancelledOutcome`` when it was cancelled before it began). `nil` while not finished.
    public final var result: Result<Output, Failure>? {
        state.withLock { if case .finished(let result) = $0 { result } else { nil } }
    }

    /// The output of a finished operation, or the error it finished with.
    ///
    /// Dependents call this from their own ``execute()``; it traps if the producer has not
    /// finished, because reading an unfinished dependency is a bug in the operation graph.
    public final func output() throws(Failure) -> Output {
        guard let result else { preconditionFailure("\(self) read before it finished") }
        return try result.get()
    }

    /// Units of work done so far and the total when known; safe to read from any thread.
    public final var progress: OperationProgress {
        progressState.withLock { $0 }
    }

    /// Records progress for progress bars and the daemon's status line.
    public final func updateProgress(_ update: (inout OperationProgress) -> Void) {
        progressState.withLock { update(&$0) }
    }

    /// When ``start()`` began the work (nil before, and for an operation cancelled before it
    /// began); safe to read from any thread.
    public final var startedAt: ContinuousClock.Instant? {
        beganAt.withLock { $0 }
    }

    public final override func start() {
        // isCancelled is read under our lock and cancel() sets the flag before taking it, so a
        // cancellation racing start() is seen either here or by cancel() (never by neither).
        let begins: Bool = state.withLock { state in
            guard case .ready = state else {
                preconditionFailure("\(self) started while \(state)")
            }
            if isCancelled {
                state = .finished(cancelledOutcome)
                return false
            }
            state = .executing
            return true
        }
        if begins {
            beganAt.withLock { $0 = .now }
            didChangeValue(forKey: "isExecuting")
            execute()
        } else {
            didFinish()
            didChangeValue(forKey: "isFinished")
        }
    }

    public final override func cancel() {
        super.cancel()
        let running = state.withLock { if case .executing = $0 { true } else { false } }
        if running {
            cancelExecution()
        }
    }

    /// Starts the work. Called once, on the thread that called `start()`, only when not cancelled.
    open func execute() {
        preconditionFailure("\(type(of: self)) must override execute()")
    }

    /// Stops in-flight work after `cancel()`; the work must then call ``finish(_:)``.
    /// May run on any thread, and may run while ``execute()`` is still setting up, so check
    /// `isCancelled` after setup as well. The default finishes with ``cancelledOutcome``.
    open func cancelExecution() {
        finish(cancelledOutcome)
    }

    /// Ends the operation with its outcome. Only the first call has an effect.
    public final func finish(_ result: Result<Output, Failure>) {
        let finished: Bool = state.withLock { state in
            switch state {
            case .ready:
                preconditionFailure("\(self) finished before it started")
            case .executing:
                state = .finished(result)
                return true
            case .finished:
                return false
            }
        }
        guard finished else { return }
        didFinish()
        didChangeValue(forKey: "isExecuting")
        didChangeValue(forKey: "isFinished")
    }

    /// Called once, just before the queue learns that the operation finished.
    open func didFinish() {}
}

extension AsyncOperation {
    /// Finishes with the value or error of `body`.
    public final func finish(catching body: () throws(Failure) -> Output) {
        finish(Result(catching: body))
    }
}
