import Foundation

/// A store's row in `ferry_sync_state`, plus its live record count.
public struct SyncState: Sendable, Equatable {
    public var store: String
    /// The cursor or sync-token the next incremental pass starts from; nil means a full sync.
    public var cursor: String?
    public var lastAttempt: Date?
    public var lastSuccess: Date?
    /// The last failure's message, cleared by a success.
    public var lastError: String?
    /// Live rows (tombstones excluded).
    public var recordCount: Int
    /// Cumulative over all successful passes.
    public var totalInserted: Int64
    public var totalUpdated: Int64
    public var totalDeleted: Int64
    /// Why the replica knowingly differs from the remote (``ReplicaGap``s of the last pass, a
    /// first sync not finished); nil when it does not.
    public var incomplete: String?
    /// The next pass must list every id again (a sweep failed or was refused).
    public var sweepPending = false
    /// Records the remote has that the replica could not store, kept to be fetched again.
    public var pendingRecords = 0
    /// Records a push created, which the next pull reads back by id to confirm (not missing:
    /// the replica holds what the push wrote).
    public var createsToReadBack = 0
    /// When a pass last swept the store's deleted ids (nil: never).
    public var lastSwept: Date?
    /// Local writes waiting to be pushed (push stores).
    public var localWritesQueued = 0
    /// Local writes the remote refused, kept with the reason.
    public var localWritesRefused = 0
    /// The remote's words for the latest of those refusals (nil: none refused).
    public var lastRefusal: String?
    /// Conflicts not resolved yet (held, or resolved by a person and not carried out yet).
    public var openConflicts = 0

    public init(store: String, cursor: String? = nil, lastAttempt: Date? = nil, lastSuccess: Date? = nil, lastError: String? = nil, recordCount: Int = 0, totalInserted: Int64 = 0, totalUpdated: Int64 = 0, totalDeleted: Int64 = 0) {
        self.store = store
        self.cursor = cursor
        self.lastAttempt = lastAttempt
        self.lastSuccess = lastSuccess
        self.lastError = lastError
        self.recordCount = recordCount
        self.totalInserted = totalInserted
        self.totalUpdated = totalUpdated
        self.totalDeleted = totalDeleted
    }
}
