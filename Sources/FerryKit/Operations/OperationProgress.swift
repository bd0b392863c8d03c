/// How far an operation has come: what the progress bars of `ferry sync` and the daemon's
/// `STATUS=` line read while a pass runs.
public struct OperationProgress: Sendable, Equatable {
    /// Units done so far (records for a sync pass).
    public var completedUnits: Int64 = 0
    /// All units, when the remote store says how many there are.
    public var totalUnits: Int64?
    /// Pages (or requests) done so far.
    public var completedPages: Int = 0
    /// When the last unit of progress was made, for the watchdog's stuck-pass check.
    public var lastAdvance: ContinuousClock.Instant = .now

    public init() {}

    /// Fraction done in 0...1, when the total is known.
    public var fractionCompleted: Double? {
        guard let totalUnits, totalUnits > 0 else { return nil }
        return min(1, Double(completedUnits) / Double(totalUnits))
    }
}
