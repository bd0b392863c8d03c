import Foundation

/// A first sync's batches held back and merged in id order (``SortedSpool``), a drain at a
/// time: at the end of the listing, every ``drainBytes`` held, before a batch the merge must
/// see in order (one with bad records), before a listing of ids begins, and when the pass
/// fails (what was fetched is kept, as batch-by-batch merging kept it).
///
/// What it changes for readers: the table of a store's first sync fills drain by drain, in id
/// order, instead of page by page. What it keeps: every change goes through
/// ``ReplicaDatabase/apply(_:to:)`` in the order the remote sent it for any one id, so the
/// rows, counts and change-log entries (logged in id order) are those of merging page by
/// page (``SpoolMerge`` keeps a batch's last-change-wins); the cursor the held batches
/// earned commits with the drain's last chunk, never before the rows it vouches for; a crash
/// while records are held loses only the fetching (the spool file is already unlinked), and
/// the next pass, still a first sync, reads them again.
final class SpooledFirstSync {
    /// Held bytes that start a drain before the listing ends: what a failure other than the
    /// pass's own (a crash, a cancellation) costs to fetch again, against how often the id
    /// index is rewritten (once per drain). At 10M records (5 GB), drains every GiB wrote 3.0×
    /// the database's size, every 2 GiB less.
    static let drainBytes = 2 << 30
    /// Changes per merge transaction in a drain: 2,500 keeps a 1M first sync's peak at about
    /// 60 MB (10,000 cost 15 MB more at the same speed).
    static let chunkSize = 2_500
    /// Memory for the sorted runs before one is written out: 4 MiB (with 32 MiB, 26 MB more of
    /// a 1M first sync's peak, no faster).
    static let runBytes = 4 << 20

    private let spool: SortedSpool
    private let store: String
    private let drainBytes: Int
    /// Errors of drained batches name the store's URL, not a page: the records are mixed.
    private let origin: String
    // What the held batches carry besides records, committed with the drain's last chunk.
    private var cursor: String?
    private var digests: [PageDigest] = []
    private var lastPage: Int?
    private var unchangedRecords = 0
    /// Batches held so far, which numbers them.
    private var batches: UInt32 = 0
    /// False while a drain runs and after one failed: what is held is then partly merged, and
    /// a second drain (the failing pass's own) would only merge the same runs again.
    private(set) var mayDrain = true

    init(replicaPath: String, store: String, origin: String, drainBytes: Int = drainBytes, runBytes: Int = runBytes) {
        spool = SortedSpool(directory: (replicaPath as NSString).deletingLastPathComponent, replicaPath: replicaPath, store: store,
                            runBytes: runBytes)
        self.store = store
        self.drainBytes = drainBytes
        self.origin = origin
    }

    /// Whether `batch` may be held: not when it has records the merge will refuse, whose
    /// problems are reported against their page and must meet the rows in the remote's order.
    static func accepts(_ batch: ChangeBatch, maxRecordBytes: Int) -> Bool {
        guard batch.problems.isEmpty else { return false }
        return batch.changes.allSatisfy { change in
            switch change {
            case .upsert(let record): MergePlan.problem(with: record, maxBytes: maxRecordBytes) == nil
            case .delete(let id): !id.isEmpty
            }
        }
    }

    /// Holds an accepted batch; true when enough is held for a drain.
    func hold(_ batch: ChangeBatch) throws(StoreError) -> Bool {
        try spool.add(batch.changes, batch: batches)
        batches += 1
        if let batchCursor = batch.cursor { cursor = batchCursor }
        digests += batch.pageDigests
        if let last = batch.lastPage { lastPage = last }
        unchangedRecords += batch.unchangedRecords
        return spool.bytes >= drainBytes
    }

    /// Records held.
    var heldRecords: Int { spool.count }

    /// Whether nothing held has gone to disk yet (a drain is quick).
    var isInMemory: Bool { spool.runs.isEmpty }

    /// Whether a drain has anything to commit.
    var isEmpty: Bool {
        spool.isEmpty && cursor == nil && digests.isEmpty && lastPage == nil && unchangedRecords == 0
    }

    /// Merges everything held, in id order: `apply` gets chunks of ``chunkSize`` changes, the
    /// last with the held cursor and page digests. Afterwards nothing is held. A drain of more
    /// than one chunk builds the next chunks on a thread of its own (``MergeReadAhead``) while
    /// `apply` runs.
    func drain(_ apply: (ChangeBatch) throws(SyncError) -> Void) throws(SyncError) {
        guard !isEmpty else { return }
        precondition(mayDrain, "drain of a spool whose last drain failed or is running")
        mayDrain = false
        let spoolFailure = { (error: StoreError) in SyncError(error, store: self.store) }
        let merge: SpoolMerge
        do { merge = try spool.merged() } catch { throw spoolFailure(error) }
        // A drain of one chunk has nothing to overlap: no thread for it (a daemon's many small
        // first syncs).
        let ahead = spool.count > Self.chunkSize ? MergeReadAhead(merge, limit: Self.chunkSize) : nil
        defer { ahead?.finish() }
        let next = { () throws(StoreError) -> MergeReadAhead.Chunk in
            if let ahead { try ahead.next() } else { try merge.next(limit: Self.chunkSize) }
        }
        var chunk: MergeReadAhead.Chunk
        do { chunk = try next() } catch { throw spoolFailure(error) }
        while true {
            var following: MergeReadAhead.Chunk = ([], 0)
            if !chunk.changes.isEmpty {
                do { following = try next() } catch { throw spoolFailure(error) }
            }
            var batch = ChangeBatch(changes: chunk.changes, cursor: nil, origin: origin)
            batch.unchangedRecords = chunk.superseded
            if following.changes.isEmpty {
                batch.cursor = cursor
                batch.pageDigests = digests
                batch.lastPage = lastPage
                batch.unchangedRecords += unchangedRecords + following.superseded
            }
            try apply(batch)
            if following.changes.isEmpty { break }
            chunk = following
        }
        // The reading thread is done with the spool before it is reset.
        ahead?.finish()
        cursor = nil
        digests = []
        lastPage = nil
        unchangedRecords = 0
        do { try spool.reset() } catch { throw spoolFailure(error) }
        mayDrain = true
    }

    /// Lets go of what is held (the file's blocks go with it).
    func close() {
        spool.close()
    }
}
