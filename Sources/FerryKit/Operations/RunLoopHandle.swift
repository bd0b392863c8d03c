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
