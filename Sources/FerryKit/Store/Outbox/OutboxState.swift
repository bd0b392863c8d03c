/// Where a queued local change stands: `ferry_outbox.state`, and the words the
/// `ferry_pending_writes` view shows for it.
///
/// Every SQL site that reads or writes the column interpolates a case's ``sql`` instead of a
/// bare number, so the states are named once, here.
public enum OutboxState: Int64, Sendable, CaseIterable {
    /// Waiting for the next push.
    case queued = 0
    /// The remote refused the change itself (`last_error` says why); tried again after the
    /// next local write of the record.
    case refused = 1
    /// Held in a conflict until a person chooses a side (`ferry conflicts resolve`).
    case held = 2

    /// The state as an SQL literal.
    var sql: String { String(rawValue) }
}
