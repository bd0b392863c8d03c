import FerryKit
import Foundation

/// Time from posting a block to a ``RunLoopOperation``'s loop with ``RunLoopHandle/perform(_:)``
/// (what libcurl's I/O thread does with every delivery) until the block runs on that loop.
enum CrossThreadLatency {
    struct Result {
        /// Microseconds.
        var median: Double
        var p99: Double
        var max: Double
    }

    /// Written on the operation's thread before the semaphore is signalled, read after the
    /// poster's wait: the semaphore orders every access.
    private final class Samples: @unchecked Sendable {
        var values: [Double] = []
    }

    static func measure(samples count: Int) throws -> Result {
        let queue = OperationQueue()
        let target = ParkedOperation()
        queue.addOperation(target)
        _ = target.waitForThreadID()
        guard let handle = target.runLoopHandle else {
            throw BenchError.transferFailed("the operation's run loop is gone")
        }
        let samples = Samples()
        samples.values.reserveCapacity(count)
        let ran = DispatchSemaphore(value: 0)
        for _ in 0..<count {
            // Let the loop fall asleep again, so every sample includes the wake-up.
            usleep(100)
            let posted = DispatchTime.now().uptimeNanoseconds
            handle.perform {
                let now = DispatchTime.now().uptimeNanoseconds
                samples.values.append(Double(now - posted) / 1_000)
                ran.signal()
            }
            ran.wait()
        }
        target.cancel()
        queue.waitUntilAllOperationsAreFinished()
        let values = samples.values
        return Result(
            median: CoreBenchmark.median(values),
            p99: CoreBenchmark.percentile(values, 0.99),
            max: values.max() ?? .nan
        )
    }
}
