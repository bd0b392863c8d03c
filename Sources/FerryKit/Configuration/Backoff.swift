/// When to try a store again after failures: exponential with jitter, capped, never sooner
/// than the server asked (Retry-After, a rate-limit reset).
public struct Backoff: Sendable, Equatable {
    public var base: Duration = .seconds(5)
    public var cap: Duration = .seconds(3600)
    /// Failures that no retry fixes (bad credentials, a configuration the remote refuses) wait
    /// at least this long, so a typo does not hammer the server.
    public var permanentFailureDelay: Duration = .seconds(900)

    public init() {}

    /// The delay before the next attempt after `failures` consecutive failures (1 = first).
    /// `unit` is a random number in 0..<1; half the delay is fixed and half random, so many
    /// stores failing together spread out again.
    public func delay(afterFailures failures: Int, error: SyncError?, unit: Double) -> Duration {
        let exponent = min(max(failures - 1, 0), 20)
        let raw = min(base * (1 << exponent), cap)
        var delay = raw * (0.5 + 0.5 * unit)
        if let error, !error.isRetryable {
            delay = max(delay, permanentFailureDelay)
        }
        if let retryAfter = error?.retryAfter {
            delay = max(delay, min(retryAfter, cap))
        }
        return delay
    }
}
