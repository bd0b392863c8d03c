/// Consecutive pages a JSON source has parsed but not yet handed to its sink, gathered into
/// one ``ChangeBatch`` so a first sync merges in large transactions (see
/// ``JSONCollectionSource/batchTarget``).
struct PendingBatch {
    private(set) var changes: [RecordChange] = []
    private(set) var problems: [RecordProblem] = []
    /// Ids for reconciliation, listed before the batch is handed over.
    private(set) var ids: [String] = []
    private(set) var bodyBytes = 0
    private(set) var totalHint: Int64?
    /// The first held page's URL (redacted): where a failed merge of the batch points.
    private(set) var origin = ""
    /// The cursor the held pages earned, when the source commits per page.
    var cursor: String?
    /// The held pages' digests, and the records of those skipped as unchanged.
    private(set) var digests: [PageDigest] = []
    private(set) var unchangedRecords = 0
    private(set) var unchangedPages = 0
    private var firstAdded: ContinuousClock.Instant?

    var isEmpty: Bool { firstAdded == nil }
    var count: Int { changes.count }
    /// Pages added since the last flush.
    private(set) var pageCount = 0
    /// How long the oldest held page has waited.
    var age: Duration { firstAdded.map { .now - $0 } ?? .zero }

    mutating func add(changes pageChanges: [RecordChange], problems pageProblems: [RecordProblem], ids pageIDs: [String],
                      bodyBytes pageBytes: Int, totalHint pageTotal: Int64?, origin pageOrigin: String,
                      digest: PageDigest? = nil, unchangedRecords pageUnchanged: Int = 0) {
        if let digest { digests.append(digest) }
        unchangedRecords += pageUnchanged
        if pageUnchanged > 0 { unchangedPages += 1 }
        if firstAdded == nil {
            firstAdded = .now
            origin = pageOrigin
            // The first page's arrays are taken as they are: no copy for the common one-page batch.
            changes = pageChanges
            problems = pageProblems
            ids = pageIDs
        } else {
            changes += pageChanges
            problems += pageProblems
            ids += pageIDs
        }
        bodyBytes += pageBytes
        pageCount += 1
        if totalHint == nil { totalHint = pageTotal }
    }
}
