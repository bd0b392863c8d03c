/// The end of a mark-and-sweep reconciliation.
public enum ReconcileOutcome: Sendable, Equatable {
    /// Rows missing from the remote listing were removed (or tombstoned).
    case swept(deleted: Int)
    /// The sweep would have removed more than the store's `maxDeleteShare` of its rows, so
    /// nothing was removed: more likely a broken listing than a real mass deletion.
    case refused(wouldDelete: Int, of: Int)

    /// The refusal rule: a sweep that would remove more than `maxDeleteShare` (0...1) of the
    /// `total` live rows is refused; nil when it may go ahead.
    static func refusal(wouldDelete: Int, of total: Int, maxDeleteShare: Double) -> ReconcileOutcome? {
        guard wouldDelete > 0, Double(wouldDelete) > maxDeleteShare * Double(total) else { return nil }
        return .refused(wouldDelete: wouldDelete, of: total)
    }
}
