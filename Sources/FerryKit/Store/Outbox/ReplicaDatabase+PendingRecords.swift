import Foundation

/// Records the remote has and the replica could not store (a bad record skipped under
/// `on-bad-record = skip`, a member missing from every answer), and records a push created
/// that no pull has read back yet (``awaitConfirmation(of:in:at:)``): their ids are kept in
/// `ferry_pending_records`, and passes fetch them again where the kind can fetch by id. The
/// store counts as incomplete while a record it could not store is left; a push's own create
/// is no gap (the replica holds what the push wrote) until a pull that should have read it
/// back did not. An id leaves the table when a batch stores or deletes it, or a complete sweep
/// shows the remote no longer has it.
extension ReplicaDatabase {
    /// Up to `limit` pending ids of `store`, oldest first.
    public func pendingRecordIDs(of store: String, limit: Int = 10_000) throws(StoreError) -> [String] {
        do {
            let statement = try connection.prepare("""
                SELECT p.id FROM ferry_pending_records p JOIN ferry_stores s ON s.store_id = p.store_id
                WHERE s.name = ?1 ORDER BY p.since, p.id LIMIT ?2
                """)
            try statement.bind(store, at: 1)
            try statement.bind(limit, at: 2)
            var ids: [String] = []
            while try statement.step() { ids.append(statement.string(at: 0) ?? "") }
            return ids
        } catch { throw StoreError(error, path: path, store: store) }
    }

    /// Inside a batch's transaction: ids of `changes` that were applied leave the pending
    /// table, problems with an id enter it. Costs nothing when the store has nothing pending
    /// and the batch no problem, which is the hot path.
    func updatePending(_ prepared: PreparedStore, applied ids: some Sequence<String>, problems: [RecordProblem], at now: Double) throws(SQLiteError) {
        let entering = problems.compactMap { problem in problem.id.map { (id: $0, reason: problem.reason) } }
        guard prepared.pendingCount > 0 || !entering.isEmpty else { return }
        if prepared.pendingCount > 0 {
            let remove = try connection.prepare("DELETE FROM ferry_pending_records WHERE store_id = ?1 AND id = ?2")
            for id in ids {
                try remove.bind(prepared.storeID, at: 1)
                try remove.bind(id, at: 2)
                try remove.run()
            }
        }
        try enterPending(entering, readBack: false, of: prepared, at: now)
        try recountPending(prepared)
    }

    /// Inside a push's transaction: a record created on the remote by a push, which only a read
    /// of it by id confirms (``recordPushes(_:of:at:confirmingCreates:)``). The next pull
    /// fetches it with the changes; the store is incomplete until then.
    func awaitConfirmation(of id: String, in prepared: PreparedStore, at now: Double) throws(SQLiteError) {
        try enterPending([(id: id, reason: "created by a push; not yet read back by a pull")], readBack: true, of: prepared, at: now)
        try recountPending(prepared)
    }

    /// Ids entering the pending table, each with why; one already there takes the new reason
    /// and kind and keeps the time it entered. `readBack`: records a push created, to be read
    /// back (``awaitConfirmation(of:in:at:)``); else records the replica could not store.
    private func enterPending(_ entries: [(id: String, reason: String)], readBack: Bool, of prepared: PreparedStore, at now: Double) throws(SQLiteError) {
        guard !entries.isEmpty else { return }
        let add = try connection.prepare("""
            INSERT INTO ferry_pending_records(store_id, id, reason, since, read_back) VALUES (?1, ?2, ?3, ?4, ?5)
            ON CONFLICT(store_id, id) DO UPDATE SET reason = excluded.reason, read_back = excluded.read_back
            """)
        for entry in entries {
            // A run clears the bindings (see Statement.run): bind all of them each time.
            try add.bind(prepared.storeID, at: 1)
            try add.bind(entry.id, at: 2)
            try add.bind(entry.reason, at: 3)
            try add.bind(now, at: 4)
            try add.bind(readBack ? 1 : 0, at: 5)
            try add.run()
        }
    }

    /// The store's pending count, which batches read to skip the table when it is zero, as the
    /// table now holds it.
    private func recountPending(_ prepared: PreparedStore) throws(SQLiteError) {
        let count = try connection.prepare("SELECT count(*) FROM ferry_pending_records WHERE store_id = ?1")
        try count.bind(prepared.storeID, at: 1)
        prepared.pendingCount = try count.step() ? Int(count.int64(at: 0)) : 0
    }

    /// Inside a sweep's transaction: pending ids the complete listing did not name are gone
    /// from the remote, so nothing is missing for them any more.
    func forgetPendingNotListed(_ prepared: PreparedStore) throws(SQLiteError) {
        guard prepared.pendingCount > 0 else { return }
        let forget = try connection.prepare("""
            DELETE FROM ferry_pending_records WHERE store_id = ?1 AND \(ReconciliationState.notListed(prepared.storeID, column: "ferry_pending_records.id"))
            """)
        try forget.bind(prepared.storeID, at: 1)
        try forget.run()
        try recountPending(prepared)
    }

    /// Inside a sweep's transaction, when its marks were only walked (``SweepScan``): pending
    /// ids other than `listed` are gone from the remote.
    func forgetPending(of prepared: PreparedStore, except listed: Set<String>) throws(SQLiteError) {
        guard prepared.pendingCount > 0 else { return }
        let read = try connection.prepare("SELECT id FROM ferry_pending_records WHERE store_id = ?1")
        try read.bind(prepared.storeID, at: 1)
        var gone: [String] = []
        while try read.step() {
            let id = read.string(at: 0) ?? ""
            if !listed.contains(id) { gone.append(id) }
        }
        read.reset()
        let forget = try connection.prepare("DELETE FROM ferry_pending_records WHERE store_id = ?1 AND id = ?2")
        for id in gone {
            try forget.bind(prepared.storeID, at: 1)
            try forget.bind(id, at: 2)
            try forget.run()
        }
        prepared.pendingCount -= gone.count
    }
}
