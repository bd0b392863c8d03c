import Foundation
import Synchronization
import Testing
@testable import FerryKit
import FerryTestSupport

/// Does nothing until cancelled or told to finish; records which thread ran what.
final class ParkedOperation: RunLoopOperation<Void, any Error>, @unchecked Sendable {
    let ranOnOwnThread = Atomic<Bool>(false)
    let threadID = Atomic<Int32>(0)
    let started = DispatchSemaphore(value: 0)

    init() {
        super.init(cancelled: .failure(CancellationError()))
    }

    override func run() {
        ranOnOwnThread.store(!Thread.isMainThread, ordering: .relaxed)
        threadID.store(currentThreadID(), ordering: .relaxed)
        started.signal()
    }
}

@Suite("RunLoopOperation", .serialized)
struct RunLoopOperationTests {
    @Test func runsOnItsOwnThreadAndAcceptsPostedWork() throws {
        let operation = ParkedOperation()
        let queue = OperationQueue()
        queue.addOperation(operation)
        operation.started.wait()
        let postedOnLoop = Mutex<Bool?>(nil)
        let done = DispatchSemaphore(value: 0)
        #expect(operation.perform {
            postedOnLoop.withLock { $0 = operation.runLoopHandle?.isCurrent }
            done.signal()
        })
        #expect(done.wait(timeout: .now() + 5) == .success)
        #expect(postedOnLoop.withLock { $0 } == true)
        let ranOnOwnThread = operation.ranOnOwnThread.load(ordering: .relaxed)
        #expect(ranOnOwnThread)
        operation.perform { operation.finish(.success(())) }
        queue.waitUntilAllOperationsAreFinished()
        #expect(operation.isFinished)
    }

    /// Work posted to a loop whose thread has ended (a transfer's last event racing the end of
    /// its pass) is dropped: it used to stay queued in the loop, and a block holding the loop's
    /// handle kept the loop, and its three descriptors, alive for good.
    @Test func aPostAfterTheThreadEnded_isDropped_andTheLoopIsFreed() throws {
        func descriptors() -> Int { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0 }
        let queue = OperationQueue()
        let before = descriptors()
        for _ in 0..<30 {
            let operation = ParkedOperation()
            queue.addOperation(operation)
            operation.started.wait()
            let handle = try #require(operation.runLoopHandle)
            operation.perform { operation.finish(.success(())) }
            queue.waitUntilAllOperationsAreFinished()
            // The thread retires its loop just after the operation finishes.
            let deadline = Date().addingTimeInterval(5)
            while operation.runLoopHandle != nil, Date() < deadline { usleep(1000) }
            usleep(20_000)
            let ran = DispatchSemaphore(value: 0)
            handle.perform { _ = handle; ran.signal() }
            #expect(ran.wait(timeout: .now() + .milliseconds(20)) == .timedOut)
        }
        usleep(100_000)
        // Other suites run meanwhile and open files of their own: a leak would be 90 here.
        #expect(descriptors() - before < 30, "\(descriptors() - before) more descriptors after 30 ended loops")
    }

    /// Admins see passes by name in `ps -L` and `top -H`: the kernel's name of the operation's
    /// thread is the operation's name, cut to the kernel's 15 bytes.
    @Test func theThreadCarriesTheOperationsNameForTheKernel() throws {
        let operation = ParkedOperation()
        operation.name = "pass contacts-and-more"
        let queue = OperationQueue()
        queue.addOperation(operation)
        operation.started.wait()
        let tid = operation.threadID.load(ordering: .relaxed)
        let comm = try String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8)
        #expect(comm == "pass contacts-a\n")
        operation.perform { operation.finish(.success(())) }
        queue.waitUntilAllOperationsAreFinished()
    }

    @Test func aBackgroundThreadRunsNicerThanTheRestOfTheProcess() throws {
        let niceness = { @Sendable (tid: Int32) throws -> Int in
            let stat = try String(contentsOfFile: "/proc/self/task/\(tid)/stat", encoding: .utf8)
            // Field 19 of stat(5); the fields after the name start at field 3.
            return Int(stat[stat.range(of: ")")!.upperBound...].split(separator: " ")[16])!
        }
        let lowered = Mutex<Int?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.start(named: "test nice") {
            Thread.current.lowerPriorityToBackground()
            lowered.withLock { $0 = try? niceness(currentThreadID()) }
            done.signal()
        }
        done.wait()
        #expect(lowered.withLock { $0 } == Int(Thread.backgroundNice))
        // The calling thread keeps its own.
        #expect(try niceness(currentThreadID()) == 0)
    }

    @Test func cancellationStopsTheLoopPromptly() throws {
        var latencies: [Double] = []
        for _ in 0..<50 {
            let operation = ParkedOperation()
            let queue = OperationQueue()
            queue.addOperation(operation)
            operation.started.wait()
            let start = ContinuousClock.now
            operation.cancel()
            queue.waitUntilAllOperationsAreFinished()
            latencies.append((ContinuousClock.now - start).seconds * 1000)
            #expect(throws: CancellationError.self) { try operation.output() }
            // The thread ends too: posting afterwards is refused once the loop is gone.
            var attempts = 0
            while operation.runLoopHandle != nil && attempts < 5_000 { usleep(200); attempts += 1 }
            #expect(operation.runLoopHandle == nil)
        }
        latencies.sort()
        print("run-loop stop latency after cancel: median \(latencies[latencies.count / 2]) ms, max \(latencies.last!) ms")
    }

    @Test func cancelBeforeTheThreadStartsIsNotLost() {
        for _ in 0..<200 {
            let operation = ParkedOperation()
            let queue = OperationQueue()
            queue.addOperation(operation)
            operation.cancel()
            queue.waitUntilAllOperationsAreFinished()
            #expect(operation.isFinished)
        }
    }

    /// Parked run-loop threads must sleep in the kernel. Reads only these threads' CPU time
    /// from /proc, so other tests running meanwhile do not disturb the figure.
    @Test func parkedOperationsUseNoCPU() throws {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 50
        let operations = (0..<50).map { _ in ParkedOperation() }
        queue.addOperations(operations, waitUntilFinished: false)
        operations.forEach { $0.started.wait() }
        let tids = operations.map { $0.threadID.load(ordering: .relaxed) }
        let before = try tids.map(threadCPUTicks)
        Thread.sleep(forTimeInterval: 2)
        let after = try tids.map(threadCPUTicks)
        let ticks = zip(before, after).map { $1 - $0 }.reduce(0, +)
        let hz = Double(sysconf(Int32(_SC_CLK_TCK)))
        let share = Double(ticks) / hz / 2.0 * 100
        print("50 parked run-loop operations over 2 s: \(ticks) ticks = \(share)% of a core")
        // A busy loop would be 100% per thread; one tick in 2 s is the measurement's resolution.
        #expect(ticks <= 2)
        operations.forEach { $0.cancel() }
        queue.waitUntilAllOperationsAreFinished()
    }
}

/// utime + stime of one thread of this process, in clock ticks.
func threadCPUTicks(_ tid: Int32) throws -> Int {
    let stat = try String(contentsOfFile: "/proc/self/task/\(tid)/stat", encoding: .utf8)
    let fields = stat[stat.range(of: ")")!.upperBound...].split(separator: " ")
    return Int(fields[11])! + Int(fields[12])!
}

/// The kernel's id of the calling thread.
func currentThreadID() -> Int32 {
    Int32(Thread.currentKernelID ?? 0)
}
