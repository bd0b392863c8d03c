/// What a local write did to a row, as queued for the push: the operation codes of
/// `ferry_outbox.op` and `ferry_conflicts.local_op` (as the change log's). A value of its own,
/// outside the store, so kinds that push name it without depending on the replica.
public enum LocalOperation: Int64, Sendable, Equatable, CaseIterable {
    case create = 1
    case update = 2
    case delete = 3

    /// The operation as an SQL literal, for the SQL that reads or writes the codes.
    var sql: String { String(rawValue) }
}
