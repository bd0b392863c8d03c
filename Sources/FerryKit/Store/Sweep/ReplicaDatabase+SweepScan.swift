import Foundation

/// What a sweep's marks say against the store's table, from one walk of both in id order.
struct SweepScan: Equatable {
    /// Live rows the listing did not name: what the sweep would delete, before rows with a
    /// queued local change are set aside.
    var liveNotListed = 0
    /// Listed ids with no row at all, records the replica could not store set aside.
    var listedMissing = 0
    /// Records the replica could not store that the listing named; the others are gone.
    var listedPending: Set<String> = []
}

extension ReplicaDatabase {
    /// The scan of a reconciling store's marks, walked once and kept until more marks come.
    func sweepScan(of store: String) throws(StoreError) -> SweepScan {
        guard case .marking(let storeID, let marks, let kept) = reconciliations[store] else {
            throw StoreError(.other, path: path, store: store, message: "sweep without beginReconciliation")
        }
        if let kept { return kept }
        let prepared = try preparedStore(store)
        // Records the replica could not store: few, as a rule.
        let pending = prepared.pendingCount > 0 ? Set(try pendingRecordIDs(of: store, limit: .max)) : []
        let scan = try scanMarks(marks, of: prepared, pending: pending)
        reconciliations[store] = .marking(storeID: storeID, marks: marks, scan: scan)
        return scan
    }

    /// Walks the marks (sorted, each once) beside the table's id index: both in SQLite's
    /// BINARY order, so each side is read once, front to back, and no mark is written anywhere.
    /// Only rows the listing did not name are looked up (for `deleted`). The marks stay held,
    /// for the sweep's SQL when there is something to delete.
    private func scanMarks(_ marks: SortedSpool, of prepared: PreparedStore, pending: Set<String>) throws(StoreError) -> SweepScan {
        let store = prepared.definition.name
        let merge = try marks.merged(keeping: true)
        // Ids are compared as bytes, each side copied into a buffer of its own: a String per
        // mark and per row cost two allocations each, a million times at 1M records.
        var mark: [UInt8] = []
        var row: [UInt8] = []
        var scan = SweepScan()
        // A listed id among the records the replica could not store, as a String (only then).
        func pendingID(_ id: [UInt8]) -> String? {
            guard !pending.isEmpty else { return nil }
            let listed = String(decoding: id, as: UTF8.self)
            return pending.contains(listed) ? listed : nil
        }
        func listedWithoutRow(_ id: [UInt8]) {
            if let listed = pendingID(id) { scan.listedPending.insert(listed) } else { scan.listedMissing += 1 }
        }
        // Marks throw StoreError (the spool), statements SQLiteError: each statement's error
        // is given the store here, so the walk below throws one typed error.
        func sql<T>(_ body: () throws(SQLiteError) -> T) throws(StoreError) -> T {
            do { return try body() } catch { throw StoreError(error, path: path, store: store) }
        }
        let table = quoted(store)
        let rows = try sql { () throws(SQLiteError) in try connection.prepare("SELECT id FROM \(table) ORDER BY id") }
        let live = try sql { () throws(SQLiteError) in try connection.prepare("SELECT deleted = 0 FROM \(table) WHERE id = ?1") }
        var hasMark = try merge.nextID(into: &mark)
        while try sql({ () throws(SQLiteError) in try rows.step() }) {
            rows.copyText(at: 0, into: &row)
            while hasMark, Self.binaryOrder(mark, row) < 0 {
                listedWithoutRow(mark)
                hasMark = try merge.nextID(into: &mark)
            }
            if hasMark, Self.binaryOrder(mark, row) == 0 {
                if let listed = pendingID(mark) { scan.listedPending.insert(listed) }
                hasMark = try merge.nextID(into: &mark)
                continue
            }
            let isLive = try sql { () throws(SQLiteError) -> Bool in
                defer { live.reset() }
                try live.bind(String(decoding: row, as: UTF8.self), at: 1)
                return try live.step() && live.int64(at: 0) != 0
            }
            if isLive { scan.liveNotListed += 1 }
        }
        while hasMark {
            listedWithoutRow(mark)
            hasMark = try merge.nextID(into: &mark)
        }
        return scan
    }

    /// SQLite's BINARY collation: bytes as memcmp orders them, then the shorter first.
    static func binaryOrder(_ left: [UInt8], _ right: [UInt8]) -> Int {
        left.withUnsafeBytes { a in
            right.withUnsafeBytes { b in
                let common = min(a.count, b.count)
                if common > 0, let x = a.baseAddress, let y = b.baseAddress {
                    let order = memcmp(x, y, common)
                    if order != 0 { return Int(order) }
                }
                return a.count - b.count
            }
        }
    }
}
