import CoreFoundation
import Foundation

/// A reference to one thread's run loop that other threads may post work to.
///
/// `RunLoop.perform` does not wake a sleeping loop on Linux, and `RunLoop` itself is not
/// `Sendable`, so this holds the CoreFoundation run loop captured on its own thread and posts
/// with `CFRunLoopPerformBlock` followed by `CFRunLoopWakeUp` (about 10 µs median here).
public final class RunLoopHandle: @unchecked Sendable, Equatable {
    private let runLoop: CFRunLoop

    private init(_ runLoop: CFRunLoop) {
        self.runLoop = runLoop
    }

    /// The run loop of the calling thread.
    public static func current() -> RunLoopHandle {
        RunLoopHandle(CFRunLoopGetCurrent())
    }

    /// The main thread's run loop.
    public static var main: RunLoopHandle {
        RunLoopHandle(CFRunLoopGetMain())
    }

    /// Whether the calling thread is the one that runs this loop.
    public var isCurrent: Bool {
        CFRunLoopGetCurrent() === runLoop
    }

    /// Runs `block` on the loop's thread, in the default mode, waking the loop if it sleeps.
    public func perform(_ block: @escaping @Sendable () -> Void) {
        CFRunLoopPerformBlock(runLoop, kCFRunLoopDefaultMode, block)
        CFRunLoopWakeUp(runLoop)
    }

    /// Makes the loop's current `run(mode:before:)` return. A stop sent while the loop is
    /// between two runs is kept and ends the next one, so it cannot be lost.
    public func stop() {
        CFRunLoopStop(runLoop)
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
