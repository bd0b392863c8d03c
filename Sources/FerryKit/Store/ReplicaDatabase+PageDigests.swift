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
        } catch { throw StoreError(error, path: path, store: store) }
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
