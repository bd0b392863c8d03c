import Foundation

/// A member of an expanding store (a collection of a `dav-account` store) as the replica
/// records it: the store it syncs as, and what its expanding store found it as.
public struct KnownCollection: Sendable, Equatable {
    /// The collection's store name, which is also its table.
    public var store: String
    public var account: String
    public var url: String
    public var kind: StoreKind
    public var segment: String
    public var displayName: String?
    public var color: String?
    public var components: [String]
    /// When the account stopped syncing it (gone from the server, or left out by its filter)
    /// while rows of it are kept; nil while it is synced.
    public var goneSince: Date?

    /// The table each of `collections` has, by URL: the names a collection keeps
    /// (``CollectionSelection/choose(from:account:otherStores:known:)``).
    public static func tables(byURL collections: [KnownCollection]) -> [String: String] {
        Dictionary(collections.map { ($0.url, $0.store) }, uniquingKeysWith: { first, _ in first })
    }

}

extension ReplicaDatabase {
    /// The collections recorded for `account` (every account's when nil), synced ones and kept
    /// ones, in name order.
    public func knownCollections(of account: String? = nil) throws(StoreError) -> [KnownCollection] {
        do {
            let sql = "SELECT store, account, url, kind, segment, displayname, color, components, gone_since FROM ferry_collections"
                + (account == nil ? "" : " WHERE account = ?1") + " ORDER BY store"
            let statement = try connection.prepare(sql)
            if let account { try statement.bind(account, at: 1) }
            var collections: [KnownCollection] = []
            while try statement.step() {
                collections.append(KnownCollection(
                    store: statement.string(at: 0) ?? "", account: statement.string(at: 1) ?? "", url: statement.string(at: 2) ?? "",
                    kind: StoreKind(rawValue: statement.string(at: 3) ?? "") ?? .carddav, segment: statement.string(at: 4) ?? "",
                    displayName: statement.string(at: 5), color: statement.string(at: 6),
                    components: (statement.string(at: 7) ?? "").split(separator: ",").map(String.init),
                    goneSince: statement.isNull(at: 8) ? nil : Date(timeIntervalSince1970: statement.double(at: 8))))
            }
            return collections
        } catch { throw StoreError(error, path: path, store: account ?? "") }
    }

    /// Gives an account its sync-state row (it has no table), so its passes are recorded and
    /// `ferry status` shows it like any store.
    public func registerAccount(_ account: String) throws(StoreError) {
        requireWritable()
        do {
            let row = try connection.prepare("INSERT INTO ferry_sync_state(store) VALUES (?1) ON CONFLICT(store) DO NOTHING")
            try row.bind(account, at: 1)
            try row.run()
        } catch { throw StoreError(error, path: path, store: account) }
    }

    /// Records that `account` syncs `chosen` now (their tables prepared already), in one
    /// transaction: new ones are added, known ones get their current name, colour and URL and
    /// lose any `gone_since`.
    public func recordCollections(_ chosen: [ChosenCollection], of account: String, at date: Date) throws(StoreError) {
        requireWritable()
        let now = date.timeIntervalSince1970
        do {
            try connection.transaction { () throws(SQLiteError) in
                let upsert = try connection.prepare("""
                    INSERT INTO ferry_collections(store, account, url, kind, segment, displayname, color, components, first_seen, last_seen)
                    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9)
                    ON CONFLICT(store) DO UPDATE SET account = excluded.account, url = excluded.url, kind = excluded.kind,
                        segment = excluded.segment, displayname = excluded.displayname, color = excluded.color,
                        components = excluded.components, last_seen = excluded.last_seen, gone_since = NULL
                    """)
                for item in chosen {
                    let collection = item.collection
                    try upsert.bind(item.table, at: 1)
                    try upsert.bind(account, at: 2)
                    try upsert.bind(collection.url, at: 3)
                    try upsert.bind(collection.kind.name, at: 4)
                    try upsert.bind(collection.segment, at: 5)
                    try upsert.bind(collection.displayName, at: 6)
                    try upsert.bind(collection.color, at: 7)
                    try upsert.bind(collection.components.isEmpty ? nil : collection.components.joined(separator: ","), at: 8)
                    try upsert.bind(now, at: 9)
                    try upsert.run()
                    upsert.reset()
                }
                // What `ferry status` counts for an account: its collections.
                let count = try connection.prepare("UPDATE ferry_sync_state SET record_count = ?2 WHERE store = ?1")
                try count.bind(account, at: 1)
                try count.bind(chosen.count, at: 2)
                try count.run()
            }
        } catch { throw StoreError(error, path: path, store: account) }
    }

    /// Marks a collection the account no longer syncs whose rows stay.
    public func markCollectionGone(_ store: String, at date: Date) throws(StoreError) {
        requireWritable()
        do {
            let mark = try connection.prepare("UPDATE ferry_collections SET gone_since = coalesce(gone_since, ?2) WHERE store = ?1")
            try mark.bind(store, at: 1)
            try mark.bind(date.timeIntervalSince1970, at: 2)
            try mark.run()
        } catch { throw StoreError(error, path: path, store: store) }
    }

    /// Forgets a collection the account no longer syncs, once nothing of it is left to keep:
    /// drops its table when it holds no rows (no tombstones either) and no local write waits
    /// in the outbox, then its record and sync state. Returns whether it was forgotten.
    public func forgetCollection(_ store: String) throws(StoreError) -> Bool {
        requireWritable()
        let table = quoted(store)
        let map = { (error: SQLiteError) in StoreError(error, path: self.path, store: store) }
        let forgotten = try connection.transaction(mapError: map) { () throws(StoreError) -> Bool in
            do throws(SQLiteError) {
                let exists = try connection.scalarInt("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = \(literal(store))") ?? 0
                if exists > 0 {
                    let rows = try connection.scalarInt("SELECT count(*) FROM \(table)") ?? 0
                    let queued = try connection.scalarInt("""
                        SELECT count(*) FROM ferry_outbox WHERE store_id = (SELECT store_id FROM ferry_stores WHERE name = \(literal(store)))
                        """) ?? 0
                    guard rows == 0, queued == 0 else { return false }
                    try connection.execute("DROP TABLE \(table)")
                    try connection.execute("DELETE FROM ferry_store_columns WHERE store = \(literal(store))")
                }
                try connection.execute("DELETE FROM ferry_collections WHERE store = \(literal(store))")
                try connection.execute("DELETE FROM ferry_sync_state WHERE store = \(literal(store))")
                return true
            } catch { throw map(error) }
        }
        if forgotten { stores[store] = nil }
        return forgotten
    }

    /// Makes the view named after `account` show the rows of every collection it syncs, with
    /// the collection's store name in a first column `collection`: `SELECT * FROM personal
    /// WHERE collection = 'personal__contacts'`. Without a collection the view is dropped.
    /// `columns` are the account's typed columns, which every collection table has.
    public func rebuildAccountView(_ account: String, columns: [TypedColumn]) throws(StoreError) {
        requireWritable()
        // Gone collections whose rows are kept are part of the account until they go: the view
        // has every table the account has (`ferry_collections.gone_since` tells them apart).
        let synced = try knownCollections(of: account)
        let names = ["id", "version", "body", "fields", "first_seen", "last_synced", "deleted"] + columns.map(\.name)
        let list = names.map(quoted).joined(separator: ", ")
        let selects = synced.map { "SELECT \(literal($0.store)) AS collection, \(list) FROM \(quoted($0.store))" }
        let create = selects.isEmpty ? nil : "CREATE VIEW \(quoted(account)) AS " + selects.joined(separator: " UNION ALL ")
        do {
            // Unchanged, it stays: a schema change makes every connection prepare its
            // statements again.
            let current = try connection.prepare("SELECT sql FROM sqlite_schema WHERE type = 'view' AND name = ?1")
            try current.bind(account, at: 1)
            let existing: String? = try current.step() ? current.string(at: 0) : nil
            current.reset()
            guard existing != create else { return }
            try connection.transaction { () throws(SQLiteError) in
                try connection.execute("DROP VIEW IF EXISTS \(quoted(account))")
                if let create { try connection.execute(create) }
            }
        } catch { throw StoreError(error, path: path, store: account) }
    }
}
