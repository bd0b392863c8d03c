import Foundation

/// One pass the scheduler wants run.
public struct PassRequest: Sendable {
    public var store: StoreConfiguration
    public var trigger: PassTrigger
    /// Also sweep records deleted remotely (kinds that do not report deletions).
    public var reconcile: Bool
    /// Increasing per process, for `FERRY_PASS` in the journal.
    public var number: Int
    /// With `reconcile`: only when the replica's last sweep is this old (nil: now).
    public var sweepInterval: Duration? = nil
    /// The collection's sync-token as its account's discovery read it just before
    /// (``PassPlan/currentToken``): the pass makes no request when it is the stored one.
    public var currentToken: String? = nil
}

/// A pass the environment started, as the scheduler sees it.
public protocol ScheduledPass: AnyObject {
    /// Stops the pass; its completion still follows (with a cancellation, or its result if it
    /// had already ended).
    func cancel()
    /// When the pass last made progress (it has not started: when it was queued).
    var lastAdvance: ContinuousClock.Instant { get }
    /// Whether the pass is running rather than waiting for a slot.
    var isRunning: Bool { get }
    /// When the pass began running; nil while it waits for a slot, and for a pass cancelled
    /// before it ran.
    var startedAt: ContinuousClock.Instant? { get }
}

/// What the ``Scheduler`` needs from the world: the time, randomness, a wake-up call and a way
/// to run passes. ferryd uses ``LiveSchedulerEnvironment``; tests drive a scheduler with a
/// clock they move by hand and passes they finish when they choose.
public protocol SchedulerEnvironment: AnyObject {
    /// The time now, on a clock that never goes back.
    var now: ContinuousClock.Instant { get }
    /// A random number in 0..<1 (backoff and interval jitter).
    func randomUnit() -> Double
    /// Calls the scheduler's ``Scheduler/tick()`` at `instant` (as soon as possible when it
    /// has passed), replacing any wake-up asked for before; nil cancels it.
    func wake(at instant: ContinuousClock.Instant?)
    /// Starts a pass. `completion` runs later on the scheduler's thread, exactly once, never
    /// inside this call.
    func startPass(_ request: PassRequest, completion: @escaping (Result<PassReport, SyncError>) -> Void) -> any ScheduledPass
    /// Passes that may run at once (more wait in the environment's queue, up to twice this).
    var maxConcurrentPasses: Int { get set }
    /// After a pass failed in the database: what is wrong with the replica's file system in a
    /// few words ("replica disk is full"), since SQLite may say only "disk I/O error"; nil
    /// when the volume takes writes.
    func diagnoseReplica() -> String?
}
