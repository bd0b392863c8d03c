import Foundation

/// What one scanned page gives its pass: the changes (upserts, and deletions a tombstone or a
/// feed's entry says), the records that cannot be stored, the ids a sweep lists, and the
/// versions that move the marks (``VersionMarks``).
///
/// A tombstone deletes its row whether or not it carries a version (Graph's `@removed` entries
/// carry only the id); a version it has still moves the high-water mark on.
struct PageHarvest {
    var changes: [RecordChange] = []
    var problems: [RecordProblem] = []
    /// The ids a sweep lists: every record's, those that cannot be stored too.
    var ids: [String] = []
    var bodyBytes = 0
    /// The upserts' versions, in page order: they say whether the pages are sorted.
    var upsertVersions: [String] = []
    /// The tombstones' versions, which move the mark but say nothing of the order.
    var tombstoneVersions: [String] = []

    init() {}

    /// `deletes`: whether a record is a deletion; `listsIDs`: a sweep, which lists every id.
    init(_ scanned: JSONPage, body: Data, maxRecordBytes: Int, listsIDs: Bool, deletes: (JSONScannedRecord) -> Bool) {
        changes.reserveCapacity(scanned.records.count)
        for (position, record) in scanned.records.enumerated() {
            if let id = record.id, deletes(record) {
                changes.append(.delete(id: id))
                if let version = record.version { tombstoneVersions.append(version) }
                continue
            }
            switch record.outcome(in: body, maxBytes: maxRecordBytes, position: position) {
            case .record(let remote):
                changes.append(.upsert(remote))
                bodyBytes += remote.body.count
                if listsIDs { ids.append(remote.id) }
                upsertVersions.append(remote.version)
            case .problem(let problem):
                problems.append(problem)
                if listsIDs, let id = problem.id { ids.append(id) }
            }
        }
    }
}

/// The marks one listing's versions move: the high-water mark its cursor keeps, and the highest
/// version this pass itself read, against which a page that goes back shows the listing is not
/// sorted (the stored mark a pass starts from says nothing of a sweep's order).
struct VersionMarks {
    var highWater: String?
    private var passMark: String?
    private var warned = false

    init(highWater: String?) {
        self.highWater = highWater
    }

    /// Notes a page's versions; the first time a listing that should be sorted goes back on a
    /// page after the first, the version that did and the one it came after.
    mutating func note(_ harvest: PageHarvest, page number: Int, expectsSorted: Bool) -> (version: String, after: String)? {
        var backwards: (String, String)?
        for version in harvest.tombstoneVersions where JSONCollectionCursor.isNewer(version, than: highWater) { highWater = version }
        for version in harvest.upsertVersions {
            if JSONCollectionCursor.isNewer(version, than: highWater) { highWater = version }
            if expectsSorted, !warned, number > 1, let passMark, JSONCollectionCursor.isNewer(passMark, than: version) {
                warned = true
                backwards = (version, passMark)
            }
            if JSONCollectionCursor.isNewer(version, than: passMark) { passMark = version }
        }
        return backwards
    }
}

/// A sweep whose pages are those the last sweep listed (``PassPlan/listingAtRest``) counts them
/// instead of listing their ids, until a page differs or the chain turns out another length;
/// then the pages it counted are read again for their ids, so the listing names every id.
struct ListingVouch<Target> {
    /// Every page of the sweep so far is as the last sweep listed it.
    private(set) var vouched: Bool
    private var counted: [Target] = []
    private var rereads: [Target] = []
    /// The chain's length, once it ended.
    private(set) var chainLength: Int?

    init(vouched: Bool) {
        self.vouched = vouched
    }

    /// Notes a page of the chain and whether it is as the last sweep listed it.
    mutating func page(_ target: Target, unchanged: Bool) {
        if vouched, !unchanged { vouched = false }
        if vouched { counted.append(target) }
    }

    /// The listing is read whole again (it moved): no page of it is vouched for.
    mutating func abandon() {
        vouched = false
        counted = []
    }

    /// The chain ended at page `number`; a vouched listing is the last sweep's only if it is
    /// as long as that one (`knownPages`).
    mutating func chainEnded(at number: Int, knownPages: Int) {
        chainLength = number
        if vouched, number != knownPages { vouched = false }
        if !vouched { rereads = counted }
        counted = []
    }

    var hasRereads: Bool { !rereads.isEmpty }

    /// The next counted page to read again for its ids.
    mutating func nextReread() -> Target? {
        rereads.isEmpty ? nil : rereads.removeFirst()
    }
}
