import Foundation

/// What happens when another program writes a store's table: the write is queued for the
/// remote (a store with `push = yes`) or refused with an error that says why.
///
/// Both are triggers, so they hold for every SQLite client in every language (the `sqlite3`
/// shell, Python, an application), and both cost Ferry nothing: its writer connection runs with
/// triggers off (``SQLiteConnection/setTriggersEnabled(_:)``), so a merge is never mistaken for
/// a local write.
///
/// A read-only store answers any write with
///
///     Runtime error: ferry: store "quotes" is read-only: set push = yes in its section to
///     send local writes to the remote; without it, its next pass would replace them
///
/// A push store checks the write first (`BEFORE` triggers: an id never changes, Ferry's own
/// columns stay Ferry's, the body is what the remote takes, see ``LocalBodyFormat``), then
/// queues it in `ferry_outbox` in the same transaction (`AFTER` triggers), so a committed local
/// write is never lost, whether ferryd runs or not.
extension ReplicaDatabase {
    /// The operations a trigger exists for, in the trigger names' words.
    static let guardedOperations = ["INSERT", "UPDATE", "DELETE"]

    /// SQL for "now" as Unix seconds with a fraction, in a trigger or a default (SQLite 3.40
    /// has no `unixepoch('subsec')`).
    static let nowSQL = "((julianday('now') - 2440587.5) * 86400.0)"

    static func localWriteGuardName(store: String, operation: String) -> String {
        "ferry_refuse_local_\(operation.lowercased())_\(store)"
    }

    static func localWriteCheckName(store: String, operation: String) -> String {
        "ferry_check_local_\(operation.lowercased())_\(store)"
    }

    static func localWriteCaptureName(store: String, operation: String) -> String {
        "ferry_queue_local_\(operation.lowercased())_\(store)"
    }

    /// The refusing trigger of a read-only store, as SQLite stores it in `sqlite_schema`.
    static func localWriteGuard(store: String, operation: String) -> String {
        let message = "ferry: store \(store.debugDescription) is read-only: set push = yes in its section to send local writes to the remote; without it, its next pass would replace them"
        return "CREATE TRIGGER \(quoted(localWriteGuardName(store: store, operation: operation))) BEFORE \(operation) ON \(quoted(store)) "
            + "BEGIN SELECT RAISE(ABORT, \(literal(message))); END"
    }

    /// The triggers a store's table should have, by name.
    static func localWriteTriggers(for definition: StoreDefinition, storeID: Int64) -> [String: String] {
        let store = definition.name
        guard definition.writeBack.push else {
            return Dictionary(uniqueKeysWithValues: guardedOperations.map {
                (localWriteGuardName(store: store, operation: $0), localWriteGuard(store: store, operation: $0))
            })
        }
        let table = quoted(store)
        let prefix = "ferry: store \(store.debugDescription): "
        func refuse(_ condition: String, _ reason: String) -> String {
            "SELECT RAISE(ABORT, \(literal(prefix + reason))) WHERE \(condition);"
        }
        let (badBody, bodyReason) = definition.localBody.refusal(of: "NEW.body")
        let ferrysColumns = "NEW.version IS NOT OLD.version OR NEW.fields IS NOT OLD.fields OR NEW.first_seen IS NOT OLD.first_seen "
            + "OR NEW.last_synced IS NOT OLD.last_synced OR NEW.deleted IS NOT OLD.deleted"
        let now = nowSQL
        // A failed entry (refused by the remote) is tried again after a new local write.
        let (refused, queued) = (OutboxState.refused.sql, OutboxState.queued.sql)
        let retry = "state = CASE WHEN state = \(refused) THEN \(queued) ELSE state END, last_error = NULL, attempts = CASE WHEN state = \(refused) THEN 0 ELSE attempts END"
        // An operation the store cannot push (a JSON API configured without push-delete, say).
        func unpushable(_ operation: LocalOperation, _ words: String, _ key: String) -> String {
            definition.pushableOperations.contains(operation) ? ""
                : refuse("1", "this store does not push \(words) (no \(key) in its section); the write would never reach the remote") + " "
        }
        var triggers: [String: String] = [:]
        triggers[localWriteCheckName(store: store, operation: "INSERT")] =
            "CREATE TRIGGER \(quoted(localWriteCheckName(store: store, operation: "INSERT"))) BEFORE INSERT ON \(table) BEGIN "
            + unpushable(.create, "inserts", "push-create")
            + refuse("NEW.version <> '' OR NEW.deleted <> 0 OR NEW.fields IS NOT NULL",
                     "a new record's version, fields and deleted are Ferry's to set: insert id (or leave it out) and body")
            + " " + refuse(badBody, bodyReason) + " END"
        triggers[localWriteCheckName(store: store, operation: "UPDATE")] =
            "CREATE TRIGGER \(quoted(localWriteCheckName(store: store, operation: "UPDATE"))) BEFORE UPDATE ON \(table) BEGIN "
            + unpushable(.update, "updates", "push-update")
            + refuse("NEW.id IS NOT OLD.id", "a record's id is the remote's and cannot change; delete the record and insert a new one")
            + " " + refuse("OLD.deleted <> 0", "record was deleted on the remote (a tombstone); insert a new record instead")
            + " " + refuse(ferrysColumns, "only body can be changed; version, fields, first_seen, last_synced and deleted are Ferry's")
            + " " + refuse(badBody, bodyReason) + " END"
        triggers[localWriteCheckName(store: store, operation: "DELETE")] =
            "CREATE TRIGGER \(quoted(localWriteCheckName(store: store, operation: "DELETE"))) BEFORE DELETE ON \(table) BEGIN "
            + unpushable(.delete, "deletes", "push-delete")
            + refuse("OLD.deleted <> 0", "record was already deleted on the remote (a tombstone is Ferry's to keep)") + " END"
        // Each write folds into the entry already queued as OutboxFold's table says.
        let entry = "store_id = \(storeID) AND id = OLD.id"
        let (op, sent) = (OutboxFold.queuedOperation, OutboxFold.truth("sent IS NOT NULL"))
        let afterInsert = OutboxFold.sql(op) { OutboxFold.afterLocalWrite(.create, queued: $0, sent: false, synced: false) ?? $0 }
        triggers[localWriteCaptureName(store: store, operation: "INSERT")] =
            "CREATE TRIGGER \(quoted(localWriteCaptureName(store: store, operation: "INSERT"))) AFTER INSERT ON \(table) BEGIN "
            + "INSERT INTO ferry_outbox(store_id, id, op, queued, changed) VALUES (\(storeID), NEW.id, \(LocalOperation.create.sql), \(now), \(now)) "
            + "ON CONFLICT(store_id, id) DO UPDATE SET op = \(afterInsert), changed = excluded.changed, "
            + "generation = generation + 1, \(retry); END"
        let afterUpdate = OutboxFold.sql(op) { OutboxFold.afterLocalWrite(.update, queued: $0, sent: false, synced: true) ?? $0 }
        triggers[localWriteCaptureName(store: store, operation: "UPDATE")] =
            "CREATE TRIGGER \(quoted(localWriteCaptureName(store: store, operation: "UPDATE"))) AFTER UPDATE ON \(table) WHEN NEW.body IS NOT OLD.body BEGIN "
            + "INSERT INTO ferry_outbox(store_id, id, op, base_version, base_body, queued, changed) "
            + "VALUES (\(storeID), NEW.id, \(LocalOperation.update.sql), OLD.version, OLD.body, \(now), \(now)) "
            + "ON CONFLICT(store_id, id) DO UPDATE SET op = \(afterUpdate), changed = excluded.changed, generation = generation + 1, \(retry); END"
        // A delete in three steps: the entries it ends go; the others fold, and their new
        // generation tells a push in flight that the row is gone; with none left, a delete of
        // a row the remote had is queued, based on it.
        let ends = OutboxFold.condition(op, sent) { OutboxFold.afterLocalWrite(.delete, queued: $0, sent: $1, synced: false) == nil }
        // `?? $0`: the inputs it stands for are the entries the first step removed.
        let afterDelete = OutboxFold.sql(op, sent) { OutboxFold.afterLocalWrite(.delete, queued: $0, sent: $1, synced: false) ?? $0 }
        let synced = OutboxFold.truth("OLD.version <> ''")
        let queuesDelete = OutboxFold.condition(synced) { OutboxFold.afterLocalWrite(.delete, queued: nil, sent: false, synced: $0) != nil }
        guard let deleteOfARow = OutboxFold.afterLocalWrite(.delete, queued: nil, sent: false, synced: true) else {
            preconditionFailure("OutboxFold queues nothing for the delete of a synced row")
        }
        triggers[localWriteCaptureName(store: store, operation: "DELETE")] =
            "CREATE TRIGGER \(quoted(localWriteCaptureName(store: store, operation: "DELETE"))) AFTER DELETE ON \(table) BEGIN "
            + "DELETE FROM ferry_outbox WHERE \(entry) AND \(ends); "
            + "UPDATE ferry_outbox SET op = \(afterDelete), changed = \(now), generation = generation + 1, \(retry) WHERE \(entry); "
            + "INSERT INTO ferry_outbox(store_id, id, op, base_version, base_body, queued, changed) "
            + "SELECT \(storeID), OLD.id, \(deleteOfARow.sql), OLD.version, OLD.body, \(now), \(now) "
            + "WHERE \(queuesDelete) AND NOT EXISTS (SELECT 1 FROM ferry_outbox WHERE \(entry)); END"
        return triggers
    }

    /// Brings the store's triggers in line with its definition: creates the missing ones,
    /// replaces one whose text differs, drops those of the other mode. Inside
    /// ``prepare(_:)``'s transaction; costs no DDL when nothing changed, because DDL would expire
    /// every prepared statement on the connection.
    /// `existing`: the store's triggers by name, when known (none on a table just made);
    /// nil reads them from `sqlite_schema`.
    func installLocalWriteTriggers(_ definition: StoreDefinition, storeID: Int64, existing known: [String: String]? = nil) throws(SQLiteError) {
        let wanted = Self.localWriteTriggers(for: definition, storeID: storeID)
        var existing = known ?? [:]
        if known == nil {
            let read = try connection.prepare("SELECT name, sql FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = ?1 AND name LIKE 'ferry\\_%' ESCAPE '\\'")
            try read.bind(definition.name, at: 1)
            while try read.step() { existing[read.string(at: 0) ?? ""] = read.string(at: 1) ?? "" }
        }
        for (name, sql) in existing where wanted[name] != sql {
            try connection.execute("DROP TRIGGER \(quoted(name))")
        }
        for (name, sql) in wanted.sorted(by: { $0.key < $1.key }) where existing[name] != sql {
            try connection.execute(sql)
        }
    }

    /// The `CREATE TABLE` of a store. `id` takes a generated placeholder when a local insert
    /// leaves it out or NULL (the remote assigns the real one when the record is pushed), and
    /// Ferry's columns have defaults, so `INSERT INTO t(body) VALUES (...)` is a whole write.
    static func storeTableSQL(_ name: String) -> String {
        """
        CREATE TABLE \(quoted(name))(
            id TEXT PRIMARY KEY NOT NULL ON CONFLICT REPLACE DEFAULT ('local-' || lower(hex(randomblob(10)))),
            version TEXT NOT NULL DEFAULT '',
            body TEXT NOT NULL,
            fields TEXT,
            first_seen REAL NOT NULL DEFAULT \(nowSQL),
            last_synced REAL NOT NULL DEFAULT 0,
            deleted INTEGER NOT NULL DEFAULT 0
        )
        """
    }

    /// Whether a table's stored `CREATE TABLE` has the local-write defaults: replicas made before
    /// write-back have plain columns, which a local insert cannot leave out.
    static func hasLocalWriteDefaults(_ sql: String) -> Bool {
        sql.contains("ON CONFLICT REPLACE DEFAULT ('local-'")
    }

    /// Rebuilds a store's table with ``storeTableSQL(_:)`` (inside prepare's transaction), when
    /// push is turned on for a table made before write-back. Typed columns, indexes and
    /// triggers go with the old table; prepare adds them again.
    func rebuildWithLocalWriteDefaults(_ name: String) throws(SQLiteError) {
        let staging = "ferry_rebuild_\(name)"
        try connection.execute("DROP TABLE IF EXISTS \(quoted(staging))")
        try connection.execute(Self.storeTableSQL(staging))
        try connection.execute("""
            INSERT INTO \(quoted(staging))(id, version, body, fields, first_seen, last_synced, deleted)
                SELECT id, version, body, fields, first_seen, last_synced, deleted FROM \(quoted(name)) ORDER BY id
            """)
        try connection.execute("DROP TABLE \(quoted(name))")
        // Legacy renaming leaves views and triggers of the user's that name the table alone:
        // the modern rename checks them and would fail on one naming the table just dropped.
        try connection.execute("PRAGMA legacy_alter_table = ON")
        defer { try? connection.execute("PRAGMA legacy_alter_table = OFF") }
        try connection.execute("ALTER TABLE \(quoted(staging)) RENAME TO \(quoted(name))")
        let forget = try connection.prepare("DELETE FROM ferry_store_columns WHERE store = ?1")
        try forget.bind(name, at: 1)
        try forget.run()
    }
}
