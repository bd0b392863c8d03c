import Foundation

/// One record as a remote store serves it: what the merge engine writes into a store's table.
public struct RemoteRecord: Sendable, Equatable {
    /// The remote id (Parse `objectId`, a JSON id field, a DAV member href or UID).
    public var id: String
    /// The remote version: `updatedAt`, a revision number, or an ETag.
    public var version: String
    /// The full record: raw JSON object bytes, or the raw vCard / iCalendar text. Valid UTF-8.
    public var body: Data
    /// Fields extracted from a non-JSON body (vCard: UID, FN, EMAIL, TEL, ORG; iCalendar: UID,
    /// SUMMARY, DTSTART, DTEND, RRULE), stored as a JSON object so typed columns can project them.
    public var fields: [String: String]?

    public init(id: String, version: String, body: Data, fields: [String: String]? = nil) {
        self.id = id
        self.version = version
        self.body = body
        self.fields = fields
    }
}

/// One change to apply to a store.
public enum RecordChange: Sendable, Equatable {
    /// Insert, or update when the incoming version is newer (see ``VersionComparison``).
    case upsert(RemoteRecord)
    /// Remove the record (a hard delete or a tombstone, per the store's deletion policy).
    case delete(id: String)

    public var id: String {
        switch self {
        case .upsert(let record): record.id
        case .delete(let id): id
        }
    }
}

/// How the merge engine decides whether an incoming version replaces the stored one.
public enum VersionComparison: String, Sendable, Equatable {
    /// Versions sort: a replayed or stale page never overwrites newer data. Two versions that
    /// both parse as integers compare numerically, otherwise as strings (ISO-8601 UTC
    /// timestamps of one format sort as strings).
    case ordered
    /// Versions are opaque (ETags): any different version replaces the stored one, the same
    /// version is a no-op.
    case opaque
}

/// A record a remote sent that cannot be stored: no id, a non-string id, too large, invalid
/// UTF-8, malformed. What happens next is the store's `on-bad-record` policy.
public struct RecordProblem: Sendable, Equatable, CustomStringConvertible {
    /// Position of the record in the response (0-based), for records without a usable id.
    public var position: Int
    /// The id, when the record had one.
    public var id: String?
    public var reason: String

    public init(position: Int, id: String? = nil, reason: String) {
        self.position = position
        self.id = id
        self.reason = reason
    }

    public var description: String {
        if let id { "record \(id.debugDescription) (position \(position)): \(reason)" } else { "record at position \(position): \(reason)" }
    }
}

/// One page (or multiget batch, or several consecutive pages) of changes and the cursor that
/// becomes valid once it is committed. The merge engine applies the changes and stores the cursor in one transaction.
public struct ChangeBatch: Sendable, Equatable {
    public var changes: [RecordChange]
    /// A rebuild's batch (``ReplicaDatabase/switchToRebuilt(_:problems:maxDeleteShare:rowsBefore:cursor:)``):
    /// a record whose version differs from the row's replaces it, whatever the version order
    /// says, since a rebuild makes the replica what the remote holds now.
    public var rebuilds = false
    /// The cursor to store with this batch; `nil` keeps the stored cursor (for example the
    /// multiget batches of a DAV pass before its final sync-token).
    public var cursor: String?
    /// Records of this page that could not be turned into changes.
    public var problems: [RecordProblem]
    /// The remote's total record count for this pass, when it says (for progress and ETA).
    public var totalHint: Int64?
    /// Where the page came from (URL without credentials), for errors and logs.
    public var origin: String
    /// Remote pages (responses) the batch was made from: a source may gather several pages
    /// into one batch, and reports and logs count pages.
    public var pageCount: Int
    /// The digests of the batch's pages, stored with it (``PageDigest``).
    public var pageDigests: [PageDigest] = []
    /// Records of pages skipped because their digest matched: unchanged, merged before.
    public var unchangedRecords = 0
    /// Pages skipped so.
    public var unchangedPages = 0
    /// Set on the batch holding a chain's last page: digests of later pages are forgotten.
    public var lastPage: Int?

    public init(changes: [RecordChange], cursor: String?, problems: [RecordProblem] = [], totalHint: Int64? = nil, origin: String = "",
                pageCount: Int = 1) {
        self.pageCount = pageCount
        self.changes = changes
        self.cursor = cursor
        self.problems = problems
        self.totalHint = totalHint
        self.origin = origin
    }
}
