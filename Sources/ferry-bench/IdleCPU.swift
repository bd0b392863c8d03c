import Foundation

/// CPU time used by parked ``ParkedOperation`` threads, read per thread from /proc, so nothing
/// else in the process (libcurl's I/O thread, the main thread) is counted.
enum IdleCPU {
    struct Result {
        /// utime + stime clock ticks of the parked threads over the window.
        var ticks: Int
        var statPercent: Double
        /// From schedstat (nanosecond run time), when the kernel exposes it.
        var schedstatMilliseconds: Double?
        var schedstatPercent: Double?
        /// Run time the threads had used before the window (start-up), showing the reading is live.
        var startupMilliseconds: Double?
    }

    static func measure(operations count: Int, seconds: Double) throws -> Result {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = count
        let operations = (0..<count).map { _ in ParkedOperation() }
        queue.addOperations(operations, waitUntilFinished: false)
        let threads = operations.map { $0.waitForThreadID() }
        guard !threads.contains(-1) else {
            throw BenchError.transferFailed("could not read /proc/thread-self")
        }
        // Let thread start-up settle before the window opens.
        usleep(500_000)
        let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
        let startTicks = try threads.reduce(0) { $0 + (try statTicks(tid: $1)) }
        let startNanoseconds = threads.map(schedstatNanoseconds).reduce(Optional(0)) { sum, value in
            guard let sum, let value else { return nil }
            return sum + value
        }
        let start = DispatchTime.now().uptimeNanoseconds
        usleep(UInt32(seconds * 1_000_000))
        let wall = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        let endTicks = try threads.reduce(0) { $0 + (try statTicks(tid: $1)) }
        let endNanoseconds = threads.map(schedstatNanoseconds).reduce(Optional(0)) { sum, value in
            guard let sum, let value else { return nil }
            return sum + value
        }
        for operation in operations {
            operation.cancel()
        }
        queue.waitUntilAllOperationsAreFinished()

        let ticks = endTicks - startTicks
        var result = Result(ticks: ticks, statPercent: Double(ticks) / ticksPerSecond / wall * 100)
        if let startNanoseconds, let endNanoseconds {
            let used = Double(endNanoseconds - startNanoseconds)
            result.schedstatMilliseconds = used / 1e6
            result.schedstatPercent = used / 1e9 / wall * 100
            result.startupMilliseconds = Double(startNanoseconds) / 1e6
        }
        return result
    }

    /// utime + stime (fields 14 and 15) of /proc/self/task/<tid>/stat. The command name (field 2)
    /// may contain spaces and parentheses, so fields are counted after its last ')'.
    private static func statTicks(tid: Int) throws -> Int {
        let text = try String(contentsOfFile: "/proc/self/task/\(tid)/stat", encoding: .utf8)
        guard let close = text.lastIndex(of: ")") else {
            throw BenchError.transferFailed("unexpected /proc/self/task/\(tid)/stat")
        }
        // After ')': field 3 (state) is index 0, so field n is index n - 3.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let utime = Int(fields[11]), let stime = Int(fields[12]) else {
            throw BenchError.transferFailed("unexpected /proc/self/task/\(tid)/stat")
        }
        return utime + stime
    }

    /// Nanoseconds on CPU from /proc/self/task/<tid>/schedstat (its first field).
    private static func schedstatNanoseconds(tid: Int) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/self/task/\(tid)/schedstat", encoding: .utf8) else { return nil }
        return text.split(separator: " ").first.flatMap { Int($0) }
    }
}
