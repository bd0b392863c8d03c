import FerryKit

/// A ``SchedulerEnvironment`` the test drives: its clock moves only when told, its passes end
/// only when the test finishes them.
public final class FakeSchedulerEnvironment: SchedulerEnvironment {
    public var now = ContinuousClock.now
    /// What ``randomUnit()`` answers: jitter and backoff become exact.
    public var unit = 0.5
    public var wakeAt: ContinuousClock.Instant?
    public var maxConcurrentPasses = 4
    public var started: [FakePass] = []

    public init() {}

    public func randomUnit() -> Double { unit }

    public func wake(at instant: ContinuousClock.Instant?) { wakeAt = instant }

    public func startPass(_ request: PassRequest, completion: @escaping (Result<PassReport, SyncError>) -> Void) -> any ScheduledPass {
        let pass = FakePass(request: request, startedAt: now, completion: completion)
        started.append(pass)
        return pass
    }

    public func diagnoseReplica() -> String? { nil }

    /// Moves the clock, ticking the scheduler when its wake-up comes due.
    public func advance(by duration: Duration, _ scheduler: Scheduler) {
        now = now + duration
        if let wakeAt, wakeAt <= now { scheduler.tick() }
    }
}

/// A pass of a ``FakeSchedulerEnvironment``: it ends when the test calls ``finish(_:)``.
public final class FakePass: ScheduledPass {
    public let request: PassRequest
    public var lastAdvance: ContinuousClock.Instant
    public var isRunning = true
    /// The instant the pass began running; nil leaves it waiting for a slot.
    public var startedAt: ContinuousClock.Instant?
    public private(set) var cancelled = false
    private var completion: ((Result<PassReport, SyncError>) -> Void)?

    public init(request: PassRequest, startedAt: ContinuousClock.Instant, completion: @escaping (Result<PassReport, SyncError>) -> Void) {
        self.request = request
        self.lastAdvance = startedAt
        self.startedAt = startedAt
        self.completion = completion
    }

    public func cancel() { cancelled = true }

    public func finish(_ result: Result<PassReport, SyncError>) {
        guard let completion else { preconditionFailure("pass finished twice") }
        self.completion = nil
        completion(result)
    }
}
