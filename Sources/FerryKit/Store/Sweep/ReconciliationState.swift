/// Where a store's reconciliation stands; absent from the dictionary means idle.
enum ReconciliationState {
    /// Between begin and finish/cancel: the ids of the remote listing, and of records merged
    /// meanwhile, held in a ``SortedSpool`` (an arena in memory, sorted runs beside the replica
    /// once it is full). ``ReplicaDatabase/finishReconciliation(of:maxDeleteShare:rowsBefore:)``
    /// walks them beside the table's id index; only when rows are to go does it copy them, in id
    /// order and once each, into the connection's TEMP table `ferry_present` under the store's
    /// id, for the sweep's SQL.
    ///
    /// Why not straight into that table page by page: the listing comes in the remote's order,
    /// random against the table's key, and at 10M ids every insert dirtied a page of a temp
    /// b-tree far larger than its cache (hundreds of GB read and written per sweep). In id
    /// order each page of it is written once.
    ///
    /// `scan`: what the marks say against the table (``SweepScan``), once walked; more marks
    /// drop it.
    case marking(storeID: Int64, marks: SortedSpool, scan: SweepScan?)

    /// The arena of a store's marks: 8 MB holds about 220,000 ids of 16 bytes before a run goes
    /// to disk, and a few sweeps at once stay small beside ferryd's other memory.
    static let marksArenaBytes = 8 << 20

    /// A condition true when `column` (qualified by its table) holds an id the listing did not
    /// mention, once the marks are copied into the table. A lookup per row in the table's key,
    /// where `NOT IN (SELECT ...)` first copied every mark into one more temporary b-tree.
    static func notListed(_ storeID: Int64, column: String) -> String {
        "NOT EXISTS (SELECT 1 FROM temp.ferry_present p WHERE p.store_id = \(storeID) AND p.id = \(column))"
    }
}
