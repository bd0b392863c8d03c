import Foundation
@testable import FerryKit

/// Runs operations with a bound far below any timeout they would otherwise hit: a hang
/// detector, not a timing assertion. An operation still running at the bound is cancelled
/// (so the test run goes on) and reported as hung.
enum HangDetector {
    /// How one operation ended.
    enum Verdict<Output: Sendable, Failure: Error>: Sendable {
        case finished(Result<Output, Failure>, seconds: Double)
        /// Still running after the bound; cancelled.
        case hung(seconds: Double)
    }

    /// Starts `operation` on a queue of its own and waits for it at most `bound` seconds.
    static func run<Output: Sendable, Failure: Error>(_ operation: AsyncOperation<Output, Failure>, bound: TimeInterval) -> Verdict<Output, Failure> {
        let queue = OperationQueue()
        let start = Date()
        queue.addOperation(operation)
        let deadline = start.addingTimeInterval(bound)
        while !operation.isFinished, Date() < deadline {
            usleep(2_000)
        }
        let seconds = Date().timeIntervalSince(start)
        guard operation.isFinished, let result = operation.result else {
            operation.cancel()
            queue.waitUntilAllOperationsAreFinished()
            return .hung(seconds: seconds)
        }
        return .finished(result, seconds: seconds)
    }

    /// The stress rounds to run: `FERRY_STRESS_ROUNDS` when set, `default` otherwise.
    static func rounds(default count: Int) -> Int {
        ProcessInfo.processInfo.environment["FERRY_STRESS_ROUNDS"].flatMap(Int.init) ?? count
    }
}
