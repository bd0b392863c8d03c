/// A way a finished pass left the replica knowingly different from the remote. A store with a
/// gap is not `ok`: `ferry status` says `incomplete` and why, STATUS= says INCOMPLETE, the
/// journal has a line with its own `MESSAGE_ID`, `ferry sync` exits 2, and later passes retry
/// until the gap closes.
public enum ReplicaGap: Sendable, Equatable, CustomStringConvertible {
    /// Deleted records were not swept: the id listing failed or was cut short.
    case sweepSkipped(reason: String)
    /// The sweep would have deleted more than `max-delete-share` of the rows, so it deleted
    /// nothing.
    case sweepRefused(wouldDelete: Int, of: Int, maxShare: Double)
    /// Records the remote has were not stored (bad, too large, missing from an answer). Those
    /// with an id are kept and fetched again; `rereadAll` when some had no usable id, so only
    /// reading everything again can find them.
    case recordsSkipped(count: Int, sample: [String], rereadAll: Bool)
    /// The remote said how many records there are, and the pagination ended before them.
    case paginationEndedEarly(read: Int, expected: Int, hint: String)
    /// Pages asked for by position (a page number, an offset) while records were added or
    /// removed before them: a record may have been read twice or not at all.
    case listingMoved(detail: String)
    /// A first sync has not finished yet (it was cancelled or failed part-way).
    case firstSyncUnfinished
    /// Local writes the remote does not have: still queued when the pass ended (written while it
    /// ran, or put off: a create whose fate a crash left in doubt), held in a conflict until
    /// somebody resolves it, or refused by the remote (`reason`: the newest refusal's words).
    case localChangesNotPushed(queued: Int, held: Int, refused: Int, reason: String?)
    /// Records the remote lists, on pages whose digests said they were merged, have no row:
    /// rows removed behind Ferry's back. The page digests are forgotten, and the next pass
    /// reads every record again.
    case listedRecordsMissing(count: Int)
    /// A collection of a `dav-account` store that the server no longer lists, whose rows are
    /// kept: deleting all of them is more than `max-delete-share`, or local writes of it wait.
    case collectionKept(store: String, url: String, rows: Int, reason: String)
    /// A full listing found nothing, where the remote answers a name it does not know (a
    /// mistyped Parse class) the same way as an empty collection: `hint` says what to check.
    /// Not `ok` while it lasts, since a typo would otherwise sync nothing and say ok.
    case nothingListed(hint: String)

    public var description: String {
        switch self {
        case .sweepSkipped(let reason):
            "deleted records not swept: \(reason)"
        case .sweepRefused(let wouldDelete, let total, let share):
            "refused to delete \(wouldDelete) of \(total) records (more than max-delete-share \(Self.percent(share)); if the remote really lost them, raise it or run ferry resync)"
        case .recordsSkipped(let count, let sample, _):
            "\(count) record\(count == 1 ? "" : "s") not stored" + (sample.isEmpty ? "" : " (\(sample.prefix(3).map(\.debugDescription).joined(separator: ", "))\(count > 3 ? ", ..." : ""))")
                + "; fetched again by later passes"
        case .paginationEndedEarly(let read, let expected, let hint):
            "pagination ended after \(read) of \(expected) records; \(hint)"
        case .listingMoved(let detail):
            "the listing changed while it was read page by page (\(detail)); the next pass reads it again"
        case .firstSyncUnfinished:
            "first sync not finished"
        case .localChangesNotPushed(let queued, let held, let refused, let reason):
            ([queued > 0 ? "\(queued) local write\(queued == 1 ? "" : "s") not pushed yet" : nil,
              held > 0 ? "\(held) local change\(held == 1 ? "" : "s") held in conflict (ferry conflicts)" : nil,
              refused > 0 ? "\(refused) local change\(refused == 1 ? "" : "s") refused by the remote" + (reason.map { ": \($0)" } ?? "")
                + " (the journal has each refusal, MESSAGE_ID=\(MessageID.pushRefused.rawValue); a corrected write of the record sends it again)" : nil]
                as [String?]).compactMap { $0 }.joined(separator: "; ")
        case .listedRecordsMissing(let count):
            "\(count) record\(count == 1 ? "" : "s") the remote lists \(count == 1 ? "is" : "are") missing from the replica (removed outside Ferry?); the next pass reads every record again"
        case .collectionKept(let store, let url, let rows, let reason):
            "collection \(url) is no longer on the server; its \(rows) row\(rows == 1 ? " stays" : "s stay") in table \(store) (\(reason))"
        case .nothingListed(let hint):
            "the remote listed no records: \(hint)"
        }
    }

    /// Whether a later pass must list every id again to close the gap.
    var needsSweep: Bool {
        switch self {
        case .sweepSkipped, .sweepRefused, .paginationEndedEarly, .listingMoved, .listedRecordsMissing: true
        case .recordsSkipped(_, _, let rereadAll): rereadAll
        case .firstSyncUnfinished, .localChangesNotPushed, .collectionKept, .nothingListed: false
        }
    }

    /// Gaps as one line for `ferry status` and the replica's sync state.
    static func summary(_ gaps: [ReplicaGap]) -> String? {
        gaps.isEmpty ? nil : gaps.map(\.description).joined(separator: "; ")
    }

    private static func percent(_ share: Double) -> String {
        let value = share * 100
        return value == value.rounded() ? "\(Int(value))%" : String(format: "%.1f%%", value)
    }
}
