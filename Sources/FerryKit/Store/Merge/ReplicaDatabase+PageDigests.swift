import Foundation

extension ReplicaDatabase {
    /// The digests of `store`'s pages as last merged, by page number (``PageDigest``).
    public func pageDigests(of store: String) throws(StoreError) -> [Int: Int64] {
        let prepared = try preparedStore(store)
        do {
            let statement = try connection.prepare("SELECT page, digest FROM ferry_page_digests WHERE store_id = ?1", persistent: true)
            defer { statement.reset() }
            try statement.bind(prepared.storeID, at: 1)
            var digests: [Int: Int64] = [:]
            while try statement.step() { digests[Int(statement.int64(at: 0))] = statement.int64(at: 1) }
            return digests
        } catch { throw StoreError(error, path: path, store: store) }
    }

    /// Forgets `store`'s page digests: its next pass reads every page's records (after a
    /// rebuild, or when pages may no longer say what they said).
    public func forgetPageDigests(of store: String) throws(StoreError) {
        requireWritable()
        let prepared = try preparedStore(store)
        do {
            let statement = try connection.prepare("DELETE FROM ferry_page_digests WHERE store_id = ?1", persistent: true)
            try statement.bind(prepared.storeID, at: 1)
            try statement.run()
            try setSweptListing(nil, of: store)
        } catch { throw StoreError(error, path: path, store: store) }
    }

    /// Whether a sweep of `store` may take its pages for what its last sweep listed: `digests`
    /// (the stored ones, ``pageDigests(of:)``) are those of the listing that sweep read, and no
    /// transaction inserted or deleted a row since. Then a listing whose every page comes back
    /// with those bytes names exactly the live rows, and the sweep has nothing to delete.
    ///
    /// What makes it enough: rows change only through Ferry's transactions, each of which
    /// forgets the listing (``noteLiveRowsChanged(of:)``), or through local writes, which
    /// Ferry's guards refuse on a store that keeps digests (only stores that do not push keep
    /// them). A store whose guards were dropped is caught by ``listedRecordsMissing(from:)`` at
    /// a sweep that lists every id (`ferry sync --sweep`).
    public func listingAtRest(of store: String, digests: [Int: Int64]) throws(StoreError) -> Bool {
        guard let listing = PageDigest.listing(digests) else { return false }
        do {
            let statement = try connection.prepare("SELECT swept_listing FROM ferry_sync_state WHERE store = ?1")
            try statement.bind(store, at: 1)
            guard try statement.step(), !statement.isNull(at: 0) else { return false }
            return statement.int64(at: 0) == listing
        } catch { throw StoreError(error, path: path, store: store) }
    }

    /// At the end of a sweep pass: a `clean` one (it swept, and nothing is left to do: no
    /// record set aside, no gap) keeps the digest of the listing it read, which the stored
    /// page digests now are; any other forgets it.
    public func recordSweptListing(of store: String, clean: Bool) throws(StoreError) {
        requireWritable()
        let listing = clean ? PageDigest.listing(try pageDigests(of: store)) : nil
        do { try setSweptListing(listing, of: store) } catch { throw StoreError(error, path: path, store: store) }
    }

    private func setSweptListing(_ listing: Int64?, of store: String) throws(SQLiteError) {
        let statement = try connection.prepare("UPDATE ferry_sync_state SET swept_listing = ?2 WHERE store = ?1")
        try statement.bind(store, at: 1)
        if let listing { try statement.bind(listing, at: 2) } else { try statement.bindNull(at: 2) }
        try statement.run()
    }

    /// Stores a batch's page digests, in the batch's transaction, and past the chain's last
    /// page forgets the rest: a page that comes back later must be read again, since a sweep
    /// may have deleted what it held.
    func storePageDigests(of batch: ChangeBatch, in store: PreparedStore) throws(SQLiteError) {
        if !batch.pageDigests.isEmpty {
            let statement = try connection.prepare("INSERT OR REPLACE INTO ferry_page_digests(store_id, page, digest) VALUES (?1, ?2, ?3)",
                                                   persistent: true)
            for digest in batch.pageDigests {
                try statement.bind(store.storeID, at: 1)
                try statement.bind(Int64(digest.page), at: 2)
                try statement.bind(digest.value, at: 3)
                try statement.run()
            }
        }
        if let last = batch.lastPage {
            let statement = try connection.prepare("DELETE FROM ferry_page_digests WHERE store_id = ?1 AND page > ?2", persistent: true)
            try statement.bind(store.storeID, at: 1)
            try statement.bind(Int64(last), at: 2)
            try statement.run()
        }
    }
}
