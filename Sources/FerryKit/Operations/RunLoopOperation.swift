import CoreFoundation
import Foundation
import Synchronization

/// An asynchronous operation that runs on a thread of its own with a private `RunLoop`.
///
/// `start()` spawns the thread; the thread adds a keep-alive timer (a loop with no source
/// returns at once), calls ``run()``, and then runs its loop until the operation finishes.
/// Everything callback-based that ``run()`` starts, a ``RemoteSession`` above all, delivers on
/// this loop, so a subclass needs no locks for its own state. Other threads hand work to it with
/// ``perform(_:)``. While idle the thread sleeps in the kernel: no CPU.
///
/// Why not run the loop inside `main()` on the queue's worker: a blocked GCD worker starves the
/// pool (200 such operations reached only 17 concurrent here).
open class RunLoopOperation<Output: Sendable, Failure: Error>: AsyncOperation<Output, Failure>, @unchecked Sendable {
    private enum LoopState {
        case notStarted
        case running(RunLoopHandle)
        case ended
    }

    private let loopState = Mutex<LoopState>(.notStarted)
    /// Touched only on the operation's own thread.
    private var cancellationHandled = false

    public override init(cancelled: Result<Output, Failure>) {
        super.init(cancelled: cancelled)
    }

    public final override func execute() {
        Thread.start(named: name ?? "ferry-operation", stackSize: 1 << 20) { [self] in
            self.threadMain()
        }
    }

    private func threadMain() {
        let runLoop = RunLoop.current
        // The keep-alive timer is a plain CFRunLoopTimer: corelibs' block-based Timer is never
        // freed once invalidated (the daemon suite measured ~300 bytes per pass under load).
        let keepAlive = CFRunLoopTimerCreateWithHandler(nil, Date.distantFuture.timeIntervalSinceReferenceDate, 0, 0, 0) { _ in }
        CFRunLoopAddTimer(CFRunLoopGetCurrent(), keepAlive, kCFRunLoopDefaultMode)
        let handle = RunLoopHandle.current()
        loopState.withLock { $0 = .running(handle) }

        // cancel() sets the flag before it looks for the loop, so a cancellation that found no
        // loop yet is seen here.
        if isCancelled {
            handleCancellation()
        } else {
            run()
        }
        while !isFinished {
            _ = runLoop.run(mode: .default, before: .distantFuture)
        }
        CFRunLoopTimerInvalidate(keepAlive)
        loopState.withLock { $0 = .ended }
        handle.retire()
    }

    /// The loop the operation runs on, while its thread is alive.
    public final var runLoopHandle: RunLoopHandle? {
        loopState.withLock { if case .running(let handle) = $0 { handle } else { nil } }
    }

    /// Runs `block` on the operation's thread. Returns false when the thread has not started yet
    /// or has already ended; the block is then dropped.
    @discardableResult
    public final func perform(_ block: @escaping @Sendable () -> Void) -> Bool {
        guard let handle = runLoopHandle else { return false }
        handle.perform(block)
        return true
    }

    /// Starts the work on the operation's thread. Call ``finish(_:)`` when done, from any thread.
    open func run() {
        preconditionFailure("\(type(of: self)) must override run()")
    }

    /// Stops in-flight work on the operation's thread after a cancellation. Runs at most once.
    /// The default finishes with ``AsyncOperation/cancelledOutcome``; subclasses cancel their
    /// session tasks first.
    open func cancelRun() {
        finish(cancelledOutcome)
    }

    public final override func cancelExecution() {
        perform { [self] in
            self.handleCancellation()
        }
    }

    private func handleCancellation() {
        guard !cancellationHandled, !isFinished else { return }
        cancellationHandled = true
        cancelRun()
    }

    public override func didFinish() {
        // finish() may be called from any thread; the loop's run() then returns (the stop is
        // latched if the loop is between two runs) and the thread sees isFinished.
        runLoopHandle?.stop()
    }
}
