import Foundation

/// One row of `ferry_changes`: local programs follow a replica by asking for entries after the
/// last sequence number they saw.
public struct ChangeLogEntry: Sendable, Equatable, Codable {
    /// Strictly increasing, never reused, even after pruning (see migration v3).
    public var sequence: Int64
    public var store: String
    public var id: String
    /// "insert", "update" or "delete".
    public var operation: String
    public var time: Date
    /// "remote" for a change pulled from the remote, "local" for a local write the remote
    /// accepted (pushed).
    public var origin: String

    public init(sequence: Int64, store: String, id: String, operation: String, time: Date, origin: String = "remote") {
        self.origin = origin
        self.sequence = sequence
        self.store = store
        self.id = id
        self.operation = operation
        self.time = time
    }
}
