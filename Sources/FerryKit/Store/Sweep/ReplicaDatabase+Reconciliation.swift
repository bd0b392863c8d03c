import Foundation

extension ReplicaDatabase {
    /// Starts a mark-and-sweep reconciliation of a store that cannot report deletions: the pass
    /// then lists every remote id (``markPresent(_:in:)``) and ``finishReconciliation(of:maxDeleteShare:rowsBefore:)``
    /// removes the rows the listing did not mention. Records upserted by ``apply(_:to:)``
    /// meanwhile count as present.
    ///
    /// Marks are held in a ``SortedSpool`` (memory stays bounded however large the store) and
    /// walked beside the table's id index when the sweep comes (``SweepScan``); only when rows
    /// are to go are they copied, in id order, into the connection's one TEMP table,
    /// `ferry_present`, keyed by store (``ReconciliationState``). That table is created when the
    /// connection opens, never per store nor dropped: creating or dropping a table changes the
    /// schema, which expires every prepared statement of every store on the shared connection
    /// (with a table per store, the first sweep of each of 5,000 stores cost ferryd 16% of its
    /// CPU).
    public func beginReconciliation(of store: String) throws(StoreError) {
        requireWritable()
        let prepared = try preparedStore(store)
        do {
            try connection.execute("DELETE FROM temp.ferry_present WHERE store_id = \(prepared.storeID)")
        } catch { throw StoreError(error, path: path, store: store) }
        let marks = SortedSpool(directory: (path as NSString).deletingLastPathComponent, replicaPath: path, store: store,
                                runBytes: marksArenaBytes)
        reconciliations[store] = .marking(storeID: prepared.storeID, marks: marks, scan: nil)
    }

    /// Records ids the remote listing contains. Call it page by page; it touches no table.
    public func markPresent(_ ids: [String], in store: String) throws(StoreError) {
        guard case .marking = reconciliations[store] else {
            throw StoreError(.other, path: path, store: store, message: "markPresent without beginReconciliation")
        }
        try markMerged(ids, in: store)
    }

    /// Marks records a merge stored while the store is reconciling: a record the remote sent
    /// during a reconciliation pass exists remotely even if the listing was taken before it
    /// appeared.
    func markMerged(_ ids: some Sequence<String>, in store: String) throws(StoreError) {
        guard case .marking(let storeID, let marks, _) = reconciliations[store] else { return }
        reconciliations[store] = .marking(storeID: storeID, marks: marks, scan: nil)
        for id in ids { try marks.add(id: id) }
    }

    /// Copies the held marks into `temp.ferry_present`, in id order and once each, 50,000 per
    /// transaction (temp tables are private to this connection; inside a caller's transaction
    /// these are savepoints). What it copied is let go, so a second call copies only later marks.
    private func copyMarks(_ marks: SortedSpool, storeID: Int64, store: String) throws(StoreError) {
        let merge = try marks.merged()
        let insert: Statement
        do {
            insert = try connection.prepare("INSERT OR IGNORE INTO temp.ferry_present(store_id, id) VALUES (\(storeID), ?1)")
        } catch { throw StoreError(error, path: path, store: store) }
        while true {
            let ids = try merge.next(limit: 50_000).changes
            if ids.isEmpty { break }
            do {
                try connection.transaction { () throws(SQLiteError) in
                    for change in ids {
                        try insert.bind(change.id, at: 1)
                        try insert.run()
                    }
                }
            } catch { throw StoreError(error, path: path, store: store) }
        }
        try marks.reset()
    }

    /// Listed ids with no row, records the replica could not store aside: after a sweep that
    /// trusted page digests, rows removed behind Ferry's back (its guards dropped), which only
    /// reading every record again brings back. Walks the marks beside the table's id index
    /// (``SweepScan``), which the sweep then reuses.
    public func listedRecordsMissing(from store: String) throws(StoreError) -> Int {
        try sweepScan(of: store).listedMissing
    }

    /// Sweeps rows the listing did not mention: deletes them (or tombstones them) with change-log
    /// entries, in one transaction. Refuses, deleting nothing, when more than `maxDeleteShare`
    /// (0...1) of the rows that were live before the pass would go (`rowsBefore`; by default
    /// the live rows now) — a truncated listing is likelier than a mass deletion, and rows a
    /// pass inserted must not make room for deleting old ones. Either way the reconciliation
    /// is over.
    public func finishReconciliation(of store: String, maxDeleteShare: Double, rowsBefore: Int? = nil) throws(StoreError) -> ReconcileOutcome {
        guard case .marking(let storeID, let marks, _) = reconciliations[store] else {
            throw StoreError(.other, path: path, store: store, message: "finishReconciliation without beginReconciliation")
        }
        defer { cancelReconciliation(of: store) }
        let prepared = try preparedStore(store)
        // Most sweeps delete nothing: the walk says so without writing a mark anywhere.
        let scan = try sweepScan(of: store)
        if scan.liveNotListed == 0, !prepared.definition.writeBack.push {
            do {
                try connection.transaction { () throws(SQLiteError) in try forgetPending(of: prepared, except: scan.listedPending) }
            } catch { throw StoreError(error, path: path, store: store) }
            return .swept(deleted: 0)
        }
        let table = quoted(store)
        func liveRows() throws(SQLiteError) -> Int {
            if let rowsBefore { return rowsBefore }
            return Int(try connection.scalarInt("SELECT count(*) FROM \(table) WHERE deleted = 0") ?? 0)
        }
        // A store that does not push deletes exactly what the walk counted, so a refusal is
        // decided before any mark is copied.
        if !prepared.definition.writeBack.push {
            do {
                if let refusal = ReconcileOutcome.refusal(wouldDelete: scan.liveNotListed, of: try liveRows(), maxDeleteShare: maxDeleteShare) {
                    return refusal
                }
            } catch { throw StoreError(error, path: path, store: store) }
        }
        try copyMarks(marks, storeID: storeID, store: store)
        // Records with a queued local change are not swept: a local create is not on the remote
        // yet, and a remote deletion of a record changed locally is a conflict (below).
        let queued = prepared.definition.writeBack.push ? " AND id NOT IN (SELECT id FROM ferry_outbox WHERE store_id = \(prepared.storeID))" : ""
        let notListed = ReconciliationState.notListed(storeID, column: "\(table).id")
        let missing = "FROM \(table) WHERE deleted = 0 AND \(notListed)" + queued
        do {
            return try connection.transaction { () throws(SQLiteError) -> ReconcileOutcome in
                // The walk counted them already, unless queued local changes set some aside.
                let wouldDelete = prepared.definition.writeBack.push ? Int(try connection.scalarInt("SELECT count(*) \(missing)") ?? 0) : scan.liveNotListed
                if prepared.definition.writeBack.push,
                   let refusal = ReconcileOutcome.refusal(wouldDelete: wouldDelete, of: try liveRows(), maxDeleteShare: maxDeleteShare) {
                    return refusal
                }
                // A listing trusted enough to sweep also says which locally changed records the
                // remote deleted; a refused one says nothing of them either.
                if prepared.definition.writeBack.push {
                    try meetSweep(prepared, at: Self.timestamp(Date()))
                }
                guard wouldDelete > 0 else {
                    try forgetPendingNotListed(prepared)
                    return .swept(deleted: 0)
                }
                // Sequences continue from the log's next free one (see ChangeLogBuffer), in id order.
                let log = try connection.prepare("""
                    INSERT INTO ferry_change_log(seq, store_id, id, op, time)
                    SELECT (\(ChangeLogBuffer.nextSequenceSQL)) - 1 + row_number() OVER (ORDER BY id),
                           (SELECT store_id FROM ferry_stores WHERE name = ?1), id, \(ChangeLogBuffer.Operation.delete.rawValue), ?2 \(missing) ORDER BY id
                    """)
                try log.bind(store, at: 1)
                try log.bind(Self.timestamp(Date()), at: 2)
                try log.run()
                switch prepared.definition.deletion {
                case .hard:
                    try connection.execute("DELETE \(missing)")
                case .tombstone:
                    let sweep = try connection.prepare("UPDATE \(table) SET deleted = 1, last_synced = ?1 WHERE deleted = 0 AND \(notListed)" + queued)
                    try sweep.bind(Self.timestamp(Date()), at: 1)
                    try sweep.run()
                }
                let deleted = connection.changes
                if deleted > 0 { try noteLiveRowsChanged(of: store) }
                try forgetPendingNotListed(prepared)
                return .swept(deleted: deleted)
            }
        } catch { throw StoreError(error, path: path, store: store) }
    }

    /// Abandons a reconciliation (the listing failed): nothing is swept, the marks are dropped.
    public func cancelReconciliation(of store: String) {
        guard case .marking(let storeID, let marks, _) = reconciliations.removeValue(forKey: store) else { return }
        marks.close()
        // Emptying the marks cannot fail in a way the caller could act on; the next begin
        // empties them anyway.
        try? connection.execute("DELETE FROM temp.ferry_present WHERE store_id = \(storeID)")
    }
}
