import Foundation
import Logging

/// The scheduler's world in ferryd: the continuous clock, one timer on the owner's run loop,
/// ``SyncPassOperation``s on one queue, completions posted back to the owner's loop, and the
/// replica volume probe.
///
/// Confined to the thread that created it (the daemon's main thread), like the scheduler.
public final class LiveSchedulerEnvironment: SchedulerEnvironment, @unchecked Sendable {
    private let database: SharedDatabase
    private let logger: Logger
    private let owner: RunLoopHandle
    private let queue = OperationQueue()
    private var timer: MovableTimer?
    /// Set once, right after the scheduler is made; its ticks come from ``timer``.
    public weak var scheduler: Scheduler?
    /// Where passes add up their requests and bytes (ferryd's metrics).
    public var metrics: DaemonMetrics?
    /// The names of the stores of the configuration as loaded (an account's collections may not
    /// take one for a table).
    public var storeNames: Set<String> = []

    public init(database: SharedDatabase, logger: Logger) {
        self.database = database
        self.logger = logger
        self.owner = RunLoopHandle.current()
        queue.name = "ferry-passes"
    }

    public var now: ContinuousClock.Instant { .now }

    public func randomUnit() -> Double { Double.random(in: 0..<1) }

    public var maxConcurrentPasses: Int {
        get { queue.maxConcurrentOperationCount }
        set { queue.maxConcurrentOperationCount = newValue }
    }

    /// One timer, created once and moved (``MovableTimer``): swift-corelibs-foundation never
    /// frees an invalidated block-based Timer (about 300 bytes each, one per pass, measured with
    /// heaptrack under the 200-store load run of the daemon suite).
    public func wake(at instant: ContinuousClock.Instant?) {
        let timer = self.timer ?? MovableTimer { [weak self] in self?.scheduler?.tick() }
        self.timer = timer
        guard let instant else { return timer.park() }
        let delay = max(0, (instant - .now).seconds)
        // A little tolerance lets the kernel batch wake-ups of stores due close together.
        timer.tolerance = min(1, delay / 20)
        timer.fire(after: delay)
    }

    public func startPass(_ request: PassRequest, completion: @escaping (Result<PassReport, SyncError>) -> Void) -> any ScheduledPass {
        var order = PassOrder(store: request.store, database: database, trigger: request.trigger, number: request.number, logger: logger)
        order.reconcile = request.reconcile
        order.sweepInterval = request.sweepInterval
        order.tally = metrics?.tally(for: request.store.name)
        order.currentToken = request.currentToken
        order.otherStores = storeNames.subtracting([request.store.name])
        let operation = order.makeOperation()
        let box = UncheckedSendableBox(completion)
        // The operation is not captured by its own completion block (a retain cycle); its
        // result is read through a weak reference, set before the block runs.
        // A pass cancelled before it started ends with its cancelled outcome, which the
        // scheduler counts as no failure.
        let cancelled = operation.cancelledOutcome
        operation.completionBlock = { [owner, weak operation] in
            let result = operation?.result ?? cancelled
            owner.perform { box.value(result) }
        }
        queue.addOperation(operation)
        return operation
    }

    public func diagnoseReplica() -> String? {
        do {
            return try ReplicaVolume.probe(databasePath: database.path).problem
        } catch {
            logger.warning("cannot probe the replica's file system: \(error)")
            return nil
        }
    }
}

extension SyncPassOperation: ScheduledPass {
    public var lastAdvance: ContinuousClock.Instant { progress.lastAdvance }
    public var isRunning: Bool { isExecuting }
}
