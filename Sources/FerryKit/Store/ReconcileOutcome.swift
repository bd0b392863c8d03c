/// The end of a mark-and-sweep reconciliation.
public enum ReconcileOutcome: Sendable, Equatable {
    /// Rows missing from the remote listing were removed (or tombstoned).
    case swept(deleted: Int)
    /// The sweep would have removed more than the store's `maxDeleteShare` of its rows, so
    /// nothing was removed: more likely a broken listing than a real mass deletion.
    case refused(wouldDelete: Int, of: Int)
}
