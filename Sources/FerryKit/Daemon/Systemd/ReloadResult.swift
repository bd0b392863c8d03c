/// What ferryd answered to one reload request.
public struct ReloadResult: Sendable, Equatable, CustomStringConvertible {
    public enum Outcome: String, Sendable, Equatable {
        /// The new configuration is running.
        case ok
        /// The new configuration was refused; the previous one keeps running.
        case error
    }

    /// The daemon's reload counter after this reload.
    public var generation: Int
    public var outcome: Outcome
    /// The daemon's one-line explanation (the configuration problems when refused).
    public var message: String

    public init(generation: Int, outcome: Outcome, message: String) {
        self.generation = generation
        self.outcome = outcome
        self.message = message
    }

    public var succeeded: Bool { outcome == .ok }

    public var description: String {
        "reload \(generation) \(outcome.rawValue)" + (message.isEmpty ? "" : ": \(message)")
    }
}
