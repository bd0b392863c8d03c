/// One store's definition and its cached prepared statements: the bulk path prepares each SQL
/// once per store and reuses it for every record of every batch.
final class PreparedStore {
    let definition: StoreDefinition
    let select: Statement
    let insert: Statement
    /// Insert-first probe for batches of mostly new ids (see ``probe``).
    let insertIfAbsent: Statement
    let update: Statement
    /// Update-first probe for batches of mostly known ids: changes a live row only when the
    /// incoming version wins, decided in SQL (`ferry_version_order` is ``VersionOrder``).
    let updateIfNewer: Statement
    let delete: Statement
    let tombstone: Statement
    let changeLog: ChangeLogBuffer
    /// Which statement an upsert tries first: one statement, one index descent, when the guess
    /// is right. Set from the previous batch's mix (``Probe/after(_:)``), so it follows the
    /// store's phase: a first sync is all inserts, an incremental pass mostly updates, a sweep
    /// re-reads records that are mostly unchanged.
    var probe = Probe.insert
    /// Kept from batch to batch, so its table is allocated once per store.
    var deduplicator = BatchDeduplicator()
    /// Made on the first batch with a run of new records long enough for it.
    var groupedInsert: GroupedInsert?
    /// The store's id in `ferry_stores` (change log, pending records).
    let storeID: Int64
    /// Rows of the store in `ferry_pending_records`, so batches of a store with none skip
    /// their bookkeeping.
    var pendingCount: Int

    /// `storeID`: the store's id in `ferry_stores`, which ``ReplicaDatabase/prepare(_:)``
    /// registered.
    init(_ definition: StoreDefinition, storeID: Int64, connection: SQLiteConnection) throws(SQLiteError) {
        self.definition = definition
        self.storeID = storeID
        let table = quoted(definition.name)
        // ?2: the incoming body, compared in SQL so the stored one is never copied out.
        select = try connection.prepare("SELECT version, deleted, body IS ?2 FROM \(table) WHERE id = ?1", persistent: true)
        insert = try connection.prepare(
            "INSERT INTO \(table)(id, version, body, fields, first_seen, last_synced, deleted) VALUES (?1, ?2, ?3, ?4, ?5, ?5, 0)", persistent: true)
        insertIfAbsent = try connection.prepare(
            "INSERT INTO \(table)(id, version, body, fields, first_seen, last_synced, deleted) VALUES (?1, ?2, ?3, ?4, ?5, ?5, 0) ON CONFLICT(id) DO NOTHING", persistent: true)
        // A resurrected tombstone keeps its first_seen: it is the same remote record.
        update = try connection.prepare(
            "UPDATE \(table) SET version = ?2, body = ?3, fields = ?4, last_synced = ?5, deleted = 0 WHERE id = ?1", persistent: true)
        // MergePlan's table for a live row: a newer version wins, and so does the same version
        // with another body (two edits inside one coarse stamp).
        let wins = definition.comparison == .ordered
            ? "CASE ferry_version_order(?2, version) WHEN 1 THEN 1 WHEN 0 THEN body IS NOT ?3 ELSE 0 END" : "version IS NOT ?2"
        updateIfNewer = try connection.prepare(
            "UPDATE \(table) SET version = ?2, body = ?3, fields = ?4, last_synced = ?5 WHERE id = ?1 AND deleted = 0 AND \(wins)", persistent: true)
        delete = try connection.prepare("DELETE FROM \(table) WHERE id = ?1", persistent: true)
        tombstone = try connection.prepare("UPDATE \(table) SET deleted = 1, last_synced = ?2 WHERE id = ?1 AND deleted = 0", persistent: true)
        changeLog = try ChangeLogBuffer(storeID: self.storeID, connection: connection)
        let pending = try connection.prepare("SELECT count(*) FROM ferry_pending_records WHERE store_id = ?1")
        try pending.bind(self.storeID, at: 1)
        pendingCount = try pending.step() ? Int(pending.int64(at: 0)) : 0
    }
}

/// The first statement of an upsert in ``ReplicaDatabase/apply(_:to:)``; when it changes
/// nothing, the stored row is read and ``MergePlan`` decides.
enum Probe: Equatable {
    /// `INSERT ... ON CONFLICT DO NOTHING`, as a raw upsert does.
    case insert
    /// `UPDATE ... WHERE` the incoming version wins.
    case update
    /// Straight to reading the stored version: an unchanged record then costs one lookup,
    /// where a failed update and the read cost two.
    case read

    /// The probe for the next batch after one that did `counts`.
    static func after(_ counts: MergeCounts) -> Probe {
        if counts.inserted >= counts.updated + counts.unchanged { return .insert }
        return counts.unchanged > counts.updated ? .read : .update
    }
}
