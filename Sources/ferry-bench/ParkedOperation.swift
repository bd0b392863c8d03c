import FerryKit
import Foundation

/// A run-loop operation that starts nothing and waits on its loop until cancelled: what a store
/// between two passes looks like. Records its kernel thread id so the benchmark can read that
/// thread's CPU time from /proc.
final class ParkedOperation: RunLoopOperation<Void, Never>, @unchecked Sendable {
    private let readyLock = NSCondition()
    private var threadID: Int?

    /// Cancelling it is how it is meant to end.
    init() {
        super.init(cancelled: .success(()))
    }

    override func run() {
        // /proc/thread-self links to "<pid>/task/<tid>" for the calling thread.
        let link = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? ""
        let tid = link.split(separator: "/").last.flatMap { Int($0) } ?? -1
        readyLock.lock()
        threadID = tid
        readyLock.broadcast()
        readyLock.unlock()
    }

    /// Blocks until the operation's thread runs, then returns its kernel thread id (-1 when
    /// /proc/thread-self could not be read).
    func waitForThreadID() -> Int {
        readyLock.lock()
        defer { readyLock.unlock() }
        while threadID == nil {
            readyLock.wait()
        }
        return threadID ?? -1
    }
}
