import CoreFoundation
import Foundation
import Synchronization

/// A thread of its own that runs a run loop for the rest of the process's life, for work that
/// belongs to no single operation: requests whose answer several operations wait for (an
/// OAuth2 token refresh), which must not end with the operation that happened to ask first.
///
/// Started on first use; idle, it sleeps in the kernel.
final class BackgroundRunLoop: Sendable {
    /// The loop OAuth2 token requests run on.
    static let tokens = BackgroundRunLoop(name: "ferry-tokens")

    let handle: RunLoopHandle

    private init(name: String) {
        let started = Mutex<RunLoopHandle?>(nil)
        let ready = DispatchSemaphore(value: 0)
        Thread.start(named: name, stackSize: 1 << 20) {
            // A loop with no source returns at once; the timer never fires.
            let keepAlive = CFRunLoopTimerCreateWithHandler(nil, Date.distantFuture.timeIntervalSinceReferenceDate, 0, 0, 0) { _ in }
            CFRunLoopAddTimer(CFRunLoopGetCurrent(), keepAlive, kCFRunLoopDefaultMode)
            started.withLock { $0 = RunLoopHandle.current() }
            ready.signal()
            while true {
                _ = RunLoop.current.run(mode: .default, before: .distantFuture)
            }
        }
        ready.wait()
        guard let handle = started.withLock({ $0 }) else { preconditionFailure("BackgroundRunLoop: the thread gave no loop") }
        self.handle = handle
    }

    /// Runs `body` on the loop's thread.
    func perform(_ body: @escaping @Sendable () -> Void) {
        handle.perform(body)
    }
}
