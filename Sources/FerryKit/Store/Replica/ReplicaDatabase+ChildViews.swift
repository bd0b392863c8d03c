import Foundation

/// A store's child tables (``ChildTable``) as views over `json_each` of its records, made and
/// dropped by ``ReplicaDatabase/prepare(_:verifyingSchema:)`` beside its typed columns, and
/// recorded in `ferry_store_columns` under `table.NAME` so one no longer configured is dropped.
extension ReplicaDatabase {
    /// The key a child view is recorded under in `ferry_store_columns`.
    static func childViewKey(_ table: ChildTable) -> String { "table." + table.name }

    /// The view's SQL: one row per element of the live records' array, and triggers that
    /// refuse a write with the parent to write instead.
    static func childViewSQL(store: String, _ table: ChildTable) -> [String] {
        let view = quoted(table.viewName(of: store))
        // A record whose body is not JSON, or has no array there, has no elements (json_each
        // of a missing path is empty; of invalid JSON, an error that would fail the query).
        let source = "CASE WHEN json_valid(coalesce(p.fields, p.body)) THEN coalesce(p.fields, p.body) ELSE '[]' END"
        var columns = ["p.id AS parent_id", "CAST(e.key AS INTEGER) AS position", "e.value AS element"]
        for column in table.columns {
            let value = "CASE WHEN e.type IN ('object', 'array') THEN json_extract(e.value, \(literal(column.path))) END"
            columns.append("CAST(\(value) AS \(column.type.rawValue.uppercased())) AS \(quoted(column.name))")
        }
        let refusal = literal("\(table.viewName(of: store)) is a view of \(store)'s \(table.path) arrays: write the parent record in \(store) instead")
        var statements = [
            "CREATE VIEW \(view) AS SELECT \(columns.joined(separator: ", ")) FROM \(quoted(store)) AS p, json_each(\(source), \(literal(table.path))) AS e WHERE p.deleted = 0",
        ]
        for operation in ["INSERT", "UPDATE", "DELETE"] {
            statements.append("CREATE TRIGGER \(quoted("\(table.viewName(of: store))_refuse_\(operation.lowercased()))")) INSTEAD OF \(operation) ON \(view) BEGIN SELECT RAISE(ABORT, \(refusal)); END")
        }
        return statements
    }

    static func describe(_ table: ChildTable, store: String) -> String {
        childViewSQL(store: store, table).joined(separator: ";\n")
    }

    /// Brings the child views in line with the definition (inside prepare's transaction).
    func syncChildViews(of definition: StoreDefinition) throws(SQLiteError) {
        let name = definition.name
        var existing: [String: String] = [:]
        let read = try connection.prepare("SELECT name, definition FROM ferry_store_columns WHERE store = ?1 AND name LIKE 'table.%'")
        try read.bind(name, at: 1)
        while try read.step() { existing[read.string(at: 0) ?? ""] = read.string(at: 1) ?? "" }
        read.reset()
        var wanted: [String: ChildTable] = [:]
        for table in definition.childTables { wanted[Self.childViewKey(table)] = table }
        for (key, stored) in existing where wanted[key].map({ Self.describe($0, store: name) }) != stored {
            let view = name + "__" + key.dropFirst("table.".count)
            try connection.execute("DROP VIEW IF EXISTS \(quoted(view))")
            let forget = try connection.prepare("DELETE FROM ferry_store_columns WHERE store = ?1 AND name = ?2")
            try forget.bind(name, at: 1)
            try forget.bind(key, at: 2)
            try forget.run()
        }
        for table in definition.childTables where existing[Self.childViewKey(table)] != Self.describe(table, store: name) {
            // Dropping the view drops its triggers.
            try connection.execute("DROP VIEW IF EXISTS \(quoted(table.viewName(of: name)))")
            for statement in Self.childViewSQL(store: name, table) { try connection.execute(statement) }
            let remember = try connection.prepare("INSERT INTO ferry_store_columns(store, name, definition) VALUES (?1, ?2, ?3)")
            try remember.bind(name, at: 1)
            try remember.bind(Self.childViewKey(table), at: 2)
            try remember.bind(Self.describe(table, store: name), at: 3)
            try remember.run()
        }
    }
}
