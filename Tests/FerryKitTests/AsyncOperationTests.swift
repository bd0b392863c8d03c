import Foundation
import Synchronization
import Testing
@testable import FerryKit
import FerryTestSupport

/// An operation that finishes synchronously, asynchronously, or only when cancelled.
private final class ProbeOperation: AsyncOperation<Int, any Error>, @unchecked Sendable {
    enum Mode { case immediate, later, untilCancelled }
    let number: Int
    let mode: Mode
    let ledger: Ledger
    let executions = Atomic<Int>(0)
    let finishes = Atomic<Int>(0)
    var cancelledBeforeEnqueue = false

    init(number: Int, mode: Mode, ledger: Ledger) {
        self.number = number
        self.mode = mode
        self.ledger = ledger
        super.init(cancelled: .failure(CancellationError()))
    }

    override func execute() {
        executions.add(1, ordering: .relaxed)
        for case let dependency as ProbeOperation in dependencies where !dependency.isFinished {
            ledger.violations.add(1, ordering: .relaxed)
        }
        switch mode {
        case .immediate:
            finish(.success(number))
        case .later:
            DispatchQueue.global().asyncAfter(deadline: .now() + .microseconds(Int.random(in: 0...200))) {
                self.finish(.success(self.number))
            }
        case .untilCancelled:
            break
        }
    }

    override func didFinish() {
        finishes.add(1, ordering: .relaxed)
    }
}

/// A pass-like operation: its failures are ``SyncError``s, its cancellation one of them.
private final class TypedOperation: AsyncOperation<Int, SyncError>, @unchecked Sendable {
    let outcome: Result<Int, SyncError>?

    init(_ outcome: Result<Int, SyncError>?) {
        self.outcome = outcome
        super.init(cancelled: .failure(SyncError(.cancelled, store: "probe", message: "cancelled")))
    }

    override func execute() {
        if let outcome { finish(outcome) }
    }
}

private final class Ledger: Sendable {
    let violations = Atomic<Int>(0)
}

@Suite("AsyncOperation")
struct AsyncOperationTests {
    @Test func finishesWithItsOutput() throws {
        let ledger = Ledger()
        let operation = ProbeOperation(number: 7, mode: .later, ledger: ledger)
        let queue = OperationQueue()
        queue.addOperations([operation], waitUntilFinished: true)
        #expect(try operation.output() == 7)
        #expect(operation.isFinished && !operation.isExecuting)
    }

    @Test func cancelledBeforeStartFinishesWithoutExecuting() {
        let ledger = Ledger()
        let operation = ProbeOperation(number: 1, mode: .immediate, ledger: ledger)
        operation.cancel()
        let queue = OperationQueue()
        queue.addOperations([operation], waitUntilFinished: true)
        #expect(operation.executions.load(ordering: .relaxed) == 0)
        #expect(operation.finishes.load(ordering: .relaxed) == 1)
        #expect(throws: CancellationError.self) { try operation.output() }
    }

    @Test func cancelWhileExecutingStopsTheWork() {
        let ledger = Ledger()
        let operation = ProbeOperation(number: 1, mode: .untilCancelled, ledger: ledger)
        let queue = OperationQueue()
        queue.addOperation(operation)
        while !operation.isExecuting { usleep(100) }
        operation.cancel()
        queue.waitUntilAllOperationsAreFinished()
        #expect(operation.isFinished)
        #expect(throws: CancellationError.self) { try operation.output() }
    }

    /// Whatever way it ends, the reader gets a SyncError with its kind: no cast, no fallback.
    @Test(arguments: ["failed", "cancelled before start", "cancelled while running"])
    func aTypedOperationEndsWithItsOwnFailureType(_ ending: String) {
        let operation = TypedOperation(ending == "failed" ? .failure(SyncError(.httpStatus(503), store: "probe", message: "HTTP 503")) : nil)
        let queue = OperationQueue()
        if ending == "cancelled before start" { operation.cancel() }
        queue.addOperation(operation)
        if ending == "cancelled while running" {
            while !operation.isExecuting { usleep(100) }
            operation.cancel()
        }
        queue.waitUntilAllOperationsAreFinished()
        while !operation.isFinished { usleep(100) }
        do {
            _ = try operation.output()
            Issue.record("\(ending): finished with an output")
        } catch {
            // `error` is a SyncError here by its type, not by a cast.
            #expect(error.kind == (ending == "failed" ? .httpStatus(503) : .cancelled), "\(ending)")
            #expect(error.store == "probe")
        }
    }

    @Test func dependentReadsTheProducersTypedOutput() throws {
        let ledger = Ledger()
        let producer = ProbeOperation(number: 41, mode: .later, ledger: ledger)
        let seen = Mutex<Int?>(nil)
        let consumer = BlockOperation { seen.withLock { $0 = (try? producer.output()).map { $0 + 1 } } }
        consumer.addDependency(producer)
        OperationQueue().addOperations([consumer, producer], waitUntilFinished: true)
        #expect(seen.withLock { $0 } == 42)
    }

    @Test func progressIsReadableWhileRunning() {
        let ledger = Ledger()
        let operation = ProbeOperation(number: 0, mode: .untilCancelled, ledger: ledger)
        let queue = OperationQueue()
        queue.addOperation(operation)
        while !operation.isExecuting { usleep(100) }
        operation.updateProgress { $0.completedUnits = 50; $0.totalUnits = 200 }
        #expect(operation.progress.fractionCompleted == 0.25)
        operation.cancel()
        queue.waitUntilAllOperationsAreFinished()
    }

    /// 20,000 operations in a random dependency graph on two queues, with random cancellations
    /// before and during execution. The graph is fed in windows because corelibs' queue scans all
    /// blocked operations on every finish (NOTES: 20k at once takes 14-21 s).
    @Test func randomGraphStress() {
        let total = 20_000
        let ledger = Ledger()
        let queues = [OperationQueue(), OperationQueue()]
        queues[0].maxConcurrentOperationCount = 4
        queues[1].maxConcurrentOperationCount = 3
        let completions = Atomic<Int>(0)
        let group = DispatchGroup()
        let window = DispatchSemaphore(value: 400)
        var operations: [ProbeOperation] = []
        operations.reserveCapacity(total)
        var generator = SystemRandomNumberGenerator()
        var cancelledBeforeStart = 0

        for number in 0..<total {
            window.wait()
            let roll = Int.random(in: 0..<100, using: &generator)
            let mode: ProbeOperation.Mode = roll < 5 ? .untilCancelled : (roll < 50 ? .immediate : .later)
            let operation = ProbeOperation(number: number, mode: mode, ledger: ledger)
            for _ in 0..<Int.random(in: 0...3, using: &generator) where number > 0 {
                let lower = max(0, number - 300)
                operation.addDependency(operations[Int.random(in: lower..<number, using: &generator)])
            }
            operation.queuePriority = [.low, .normal, .high].randomElement(using: &generator)!
            group.enter()
            operation.completionBlock = {
                completions.add(1, ordering: .relaxed)
                window.signal()
                group.leave()
            }
            if roll >= 95 {
                operation.cancel()
                operation.cancelledBeforeEnqueue = true
                cancelledBeforeStart += 1
            }
            operations.append(operation)
            queues[number % 2].addOperation(operation)
            if mode == .untilCancelled {
                DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(Int.random(in: 0...3))) {
                    operation.cancel()
                }
            }
        }
        #expect(group.wait(timeout: .now() + 600) == .success)
        let executedTwice = operations.filter { $0.executions.load(ordering: .relaxed) > 1 }.count
        let notFinishedOnce = operations.filter { $0.finishes.load(ordering: .relaxed) != 1 }.count
        let cancelledButExecuted = operations.filter { $0.cancelledBeforeEnqueue && $0.executions.load(ordering: .relaxed) > 0 }.count
        print("stress: \(total) operations, \(cancelledBeforeStart) cancelled before start, \(completions.load(ordering: .relaxed)) completions")
        #expect(executedTwice == 0)
        #expect(notFinishedOnce == 0)
        #expect(completions.load(ordering: .relaxed) == total)
        #expect(ledger.violations.load(ordering: .relaxed) == 0)
        #expect(operations.allSatisfy { $0.isFinished })
        #expect(cancelledButExecuted == 0)
    }
}
