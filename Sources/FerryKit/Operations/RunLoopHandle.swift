import CoreFoundation
import Foundation
import Synchronization

/// A reference to one thread's run loop that other threads may post work to.
///
/// `RunLoop.perform` does not wake a sleeping loop on Linux, and `RunLoop` itself is not
/// `Sendable`, so this holds the CoreFoundation run loop captured on its own thread and posts
/// with `CFRunLoopPerformBlock` followed by `CFRunLoopWakeUp` (about 10 µs median here).
///
/// A thread has one handle (``current()`` returns the same object), which its thread retires
/// as it ends (``retire()``): work posted afterwards is dropped. Without that, a block posted
/// to a loop whose thread had ended (a transfer's last event racing the end of its pass) stayed
/// in the loop's queue forever, and when it held the handle, the loop held itself: its epoll,
/// eventfd and timerfd leaked, about one pass in nine under load.
public final class RunLoopHandle: @unchecked Sendable, Equatable {
    private let runLoop: CFRunLoop
    /// Set once the thread has ended; guards every post, so none slips in after.
    private let retired = Mutex(false)
    private static let threadKey = "ferry.runLoopHandle"

    private init(_ runLoop: CFRunLoop) {
        self.runLoop = runLoop
    }

    /// The run loop of the calling thread.
    public static func current() -> RunLoopHandle {
        let loop = CFRunLoopGetCurrent()!
        let dictionary = Thread.current.threadDictionary
        if let handle = dictionary[threadKey] as? RunLoopHandle, handle.runLoop === loop { return handle }
        let handle = RunLoopHandle(loop)
        dictionary[threadKey] = handle
        return handle
    }

    /// The main thread's run loop.
    public static var main: RunLoopHandle {
        RunLoopHandle(CFRunLoopGetMain())
    }

    /// Whether the calling thread is the one that runs this loop.
    public var isCurrent: Bool {
        CFRunLoopGetCurrent() === runLoop
    }

    /// Runs `block` on the loop's thread, in the default mode, waking the loop if it sleeps;
    /// drops it once the thread has ended.
    public func perform(_ block: @escaping @Sendable () -> Void) {
        retired.withLock { retired in
            guard !retired else { return }
            CFRunLoopPerformBlock(runLoop, kCFRunLoopDefaultMode, block)
            CFRunLoopWakeUp(runLoop)
        }
    }

    /// Makes the loop's current `run(mode:before:)` return. A stop sent while the loop is
    /// between two runs is kept and ends the next one, so it cannot be lost.
    public func stop() {
        CFRunLoopStop(runLoop)
    }

    /// Called by the loop's own thread as its last act: later posts are dropped, and what was
    /// posted before runs now, so the loop ends with nothing queued that could hold it.
    func retire() {
        precondition(isCurrent, "RunLoopHandle.retire() called off the loop's thread")
        retired.withLock { $0 = true }
        _ = CFRunLoopRunInMode(kCFRunLoopDefaultMode, 0, true)
    }

    public static func == (lhs: RunLoopHandle, rhs: RunLoopHandle) -> Bool {
        lhs.runLoop === rhs.runLoop
    }
}

extension RunLoopHandle {
    /// Runs `body` later on the calling thread's own loop, never inside the caller: how a
    /// run-loop object keeps its promise that no callback runs inside the call that started it.
    /// The block never leaves the thread, so it need not be `Sendable`.
    static func later(_ body: @escaping () -> Void) {
        let box = ThreadBound(body)
        current().perform { box.value() }
    }
}

/// A value that stays on the thread that made it, carried through an API that asks for
/// `Sendable` (posting to that same thread's run loop).
private struct ThreadBound<Value>: @unchecked Sendable {
    let value: Value

    init(_ value: Value) {
        self.value = value
    }
}
