import Foundation

extension ReplicaDatabase {
    /// The columns every store table has; typed columns may not reuse these names.
    static let baseColumns: Set<String> = ["id", "version", "body", "fields", "first_seen", "last_synced", "deleted"]

    /// Creates or updates a store's table, typed columns, indexes and sync-state row, and
    /// prepares its statements. Idempotent: call it at the start of every pass, and
    /// ``release(_:)`` at its end.
    ///
    /// Typed columns are `VIRTUAL` generated columns over the record's JSON (or its extracted
    /// fields for vCard/iCalendar), indexed when configured, so `WHERE email = ?` uses an index
    /// and no merge code has to maintain them. A column whose type or path changed is dropped and
    /// added again; a column no longer configured is dropped.
    ///
    /// What it made is fingerprinted in `ferry_stores` (``schemaFingerprint(of:storeID:)``), so a
    /// pass whose definition did not change checks nothing further. `verifyingSchema` compares
    /// the table, columns and triggers with `sqlite_schema` all the same (`ferry resync`: it
    /// remakes a trigger another program dropped).
    public func prepare(_ definition: StoreDefinition, verifyingSchema: Bool = false) throws(StoreError) {
        requireWritable()
        let name = definition.name
        for column in definition.columns where Self.baseColumns.contains(column.name) || column.name.hasPrefix("ferry_") {
            throw StoreError(.other, path: path, store: name, message: "typed column \(column.name.debugDescription) clashes with a built-in column")
        }
        let map = { (error: SQLiteError) in StoreError(error, path: self.path, store: name) }
        stores[name] = nil
        let storeID = try connection.transaction(mapError: map) { () throws(StoreError) -> Int64 in
            do throws(SQLiteError) {
                // The change log, the outbox and the triggers name stores by a small integer
                // (migration v3).
                let registered = try connection.prepare("INSERT INTO ferry_stores(name) VALUES (?1) ON CONFLICT(name) DO NOTHING")
                try registered.bind(name, at: 1)
                try registered.run()
                let lookup = try connection.prepare("SELECT store_id, schema_fingerprint FROM ferry_stores WHERE name = ?1")
                try lookup.bind(name, at: 1)
                guard try lookup.step() else { preconditionFailure("store \(name) missing from ferry_stores after its insert") }
                let storeID = lookup.int64(at: 0)
                let recorded = lookup.isNull(at: 1) ? nil : lookup.int64(at: 1)
                lookup.reset()
                let fingerprint = Self.schemaFingerprint(of: definition, storeID: storeID)
                // What the table, its columns and triggers were last made from. Checking them
                // otherwise means scanning sqlite_schema (it has no index on names): two scans of
                // a row per table, index and trigger of every store, at every pass.
                var current = !verifyingSchema && recorded == fingerprint
                if current { current = try tableExists(name) }
                if !current {
                    try makeSchema(of: definition, storeID: storeID)
                    let remember = try connection.prepare("UPDATE ferry_stores SET schema_fingerprint = ?2 WHERE store_id = ?1")
                    try remember.bind(storeID, at: 1)
                    try remember.bind(fingerprint, at: 2)
                    try remember.run()
                }
                let row = try connection.prepare("INSERT INTO ferry_sync_state(store) VALUES (?1) ON CONFLICT(store) DO NOTHING")
                try row.bind(name, at: 1)
                try row.run()
                return storeID
            } catch { throw map(error) }
        }
        do { stores[name] = try PreparedStore(definition, storeID: storeID, connection: connection) } catch { throw map(error) }
    }

    /// Drops the store's prepared statements (a pass's end): a ferryd with thousands of stores
    /// would otherwise keep a dozen compiled statements of each, hundreds of megabytes, for
    /// passes that prepare them anew anyway.
    public func release(_ store: String) {
        stores[store] = nil
    }

    /// Creates or brings in line the store's table, typed columns and triggers (inside
    /// ``prepare(_:verifyingSchema:)``'s transaction). Costs no DDL when nothing changed.
    private func makeSchema(of definition: StoreDefinition, storeID: Int64) throws(SQLiteError) {
        let name = definition.name
        guard try tableExists(name) else {
            // A new table has no typed columns and no triggers yet (a table dropped behind
            // Ferry's back took its own with it): nothing to read from sqlite_schema, which a
            // first sync of each of thousands of stores would otherwise scan.
            try connection.execute(Self.storeTableSQL(name))
            let forget = try connection.prepare("DELETE FROM ferry_store_columns WHERE store = ?1")
            try forget.bind(name, at: 1)
            try forget.run()
            try syncColumns(of: definition)
            try syncChildViews(of: definition)
            try installLocalWriteTriggers(definition, storeID: storeID, existing: [:])
            return
        }
        let existing = try connection.prepare("SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?1")
        try existing.bind(name, at: 1)
        let tableSQL: String? = try existing.step() ? existing.string(at: 0) : nil
        existing.reset()
        if let tableSQL, definition.writeBack.push, !Self.hasLocalWriteDefaults(tableSQL) {
            try rebuildWithLocalWriteDefaults(name)
        }
        try syncColumns(of: definition)
        try syncChildViews(of: definition)
        try installLocalWriteTriggers(definition, storeID: storeID)
    }

    /// Whether the table exists, from the connection's schema in memory (no scan of
    /// sqlite_schema).
    private func tableExists(_ name: String) throws(SQLiteError) -> Bool {
        let columns = try connection.prepare("SELECT 1 FROM pragma_table_info(?1) LIMIT 1")
        try columns.bind(name, at: 1)
        defer { columns.reset() }
        return try columns.step()
    }

    /// A 64-bit digest of everything ``makeSchema(of:storeID:)`` makes for `definition`: the
    /// table's SQL, each typed column and each trigger's text. A change to any of them, in the
    /// configuration or in a new Ferry, makes a different fingerprint and so a check.
    static func schemaFingerprint(of definition: StoreDefinition, storeID: Int64) -> Int64 {
        var parts = [storeTableSQL(definition.name)]
        parts += definition.columns.map { "\($0.name)=\(describe($0))" }
        parts += definition.childTables.map { describe($0, store: definition.name) }
        parts += localWriteTriggers(for: definition, storeID: storeID).sorted { $0.key < $1.key }.map(\.value)
        return Int64(bitPattern: FNV1a.hash(parts.joined(separator: "\n").utf8))
    }

    /// Brings the generated columns in line with the definition (inside prepare's transaction).
    private func syncColumns(of definition: StoreDefinition) throws(SQLiteError) {
        let name = definition.name
        let table = quoted(name)
        var existing: [String: String] = [:]
        // Child views are recorded here too, under `table.NAME` (``syncChildViews(of:)``).
        let read = try connection.prepare("SELECT name, definition FROM ferry_store_columns WHERE store = ?1 AND name NOT LIKE 'table.%'")
        try read.bind(name, at: 1)
        while try read.step() { existing[read.string(at: 0) ?? ""] = read.string(at: 1) ?? "" }

        var wanted: [String: TypedColumn] = [:]
        for column in definition.columns { wanted[column.name] = column }

        for (column, stored) in existing where wanted[column].map(Self.describe) != stored {
            try connection.execute("DROP INDEX IF EXISTS \(quoted(Self.indexName(store: name, column: column)))")
            try connection.execute("ALTER TABLE \(table) DROP COLUMN \(quoted(column))")
            let forget = try connection.prepare("DELETE FROM ferry_store_columns WHERE store = ?1 AND name = ?2")
            try forget.bind(name, at: 1)
            try forget.bind(column, at: 2)
            try forget.run()
        }
        for column in definition.columns where existing[column.name] != Self.describe(column) {
            // json_valid guards json_extract, which raises an error (failing the whole batch) on
            // a body that is not JSON; such a record simply gets NULL here.
            let source = "coalesce(fields, body)"
            let expression = "CASE WHEN json_valid(\(source)) THEN json_extract(\(source), \(literal(column.path))) END"
            try connection.execute("ALTER TABLE \(table) ADD COLUMN \(quoted(column.name)) \(column.type.rawValue.uppercased()) GENERATED ALWAYS AS (\(expression)) VIRTUAL")
            if column.indexed {
                try connection.execute("CREATE INDEX \(quoted(Self.indexName(store: name, column: column.name))) ON \(table)(\(quoted(column.name)))")
            }
            let remember = try connection.prepare("INSERT INTO ferry_store_columns(store, name, definition) VALUES (?1, ?2, ?3)")
            try remember.bind(name, at: 1)
            try remember.bind(column.name, at: 2)
            try remember.bind(Self.describe(column), at: 3)
            try remember.run()
        }
    }

    static func describe(_ column: TypedColumn) -> String {
        "\(column.type.rawValue)|\(column.indexed ? "indexed" : "plain")|\(column.path)"
    }

    static func indexName(store: String, column: String) -> String { "\(store)_\(column)_idx" }

    /// The prepared store, or an error naming the missing `prepare` call.
    func preparedStore(_ name: String) throws(StoreError) -> PreparedStore {
        guard let store = stores[name] else {
            throw StoreError(.other, path: path, store: name, message: "store not prepared on this connection (call prepare first)")
        }
        return store
    }
}
