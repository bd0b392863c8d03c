import Foundation

/// Delivers process signals (SIGHUP, SIGTERM, SIGINT) to a handler, from a thread of its own
/// that waits for them with `sigwait(2)`.
///
/// The signals are blocked in every thread, which is what ``block(_:)`` does when called first
/// thing in `main`, before any thread exists (threads inherit the mask): a signal that arrives
/// before the daemon is ready to act on it (during a slow database open) is held for the
/// waiter, never delivered to a thread whose default action would end the process silently,
/// and never lost. A thread blocked in `sigwait` costs nothing.
public final class SignalWaiter: Sendable {

    /// Blocks `signals` in the calling thread, and so in every thread it creates afterwards.
    public static func block(_ signals: [Int32]) {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in signals { sigaddset(&set, signal) }
        // EINVAL would mean a bad `how`: our bug.
        precondition(pthread_sigmask(SIG_BLOCK, &set, nil) == 0, "pthread_sigmask failed")
    }

    /// Blocks `signals` here and starts a thread that hands each one, as it arrives, to
    /// `handler` (called on that thread: post it where it belongs).
    public init(_ signals: [Int32], handler: @escaping @Sendable (Int32) -> Void) {
        Self.block(signals)
        _ = Thread.start(named: "ferry-signals") { [signals] in
            var set = sigset_t()
            sigemptyset(&set)
            for signal in signals { sigaddset(&set, signal) }
            while true {
                var received: Int32 = 0
                // sigwait returns an error number rather than setting errno; EINVAL would be a
                // bad set (our bug). It does not fail with EINTR.
                let code = sigwait(&set, &received)
                precondition(code == 0, "sigwait failed: \(code)")
                handler(received)
            }
        }
    }
}
