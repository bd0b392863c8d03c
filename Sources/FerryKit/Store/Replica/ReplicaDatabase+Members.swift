import Foundation

/// A member of an expanding store as the replica records it (an address book or calendar of a
/// `dav-account` store, or any expanding kind's member): the store it syncs as, which is also
/// its table, the expanding store that found it, where and of which kind, and what its kind
/// keeps of it as it was found (``attributes``, which the replica stores without reading).
public struct ExpandedMember: Sendable, Equatable {
    /// The member's store name, which is also its table.
    public var store: String
    /// The expanding store that found it (a `dav-account` store).
    public var expandingStore: String
    public var url: String
    /// The kind the member syncs as, by name (`carddav`); a kind this Ferry does not know
    /// (recorded by a later one) leaves the member out of what is synced.
    public var kindName: String
    /// What the member's kind keeps of it, by name (a collection's segment, display name,
    /// colour and components): the expanding kind writes and reads them, the replica does not.
    public var attributes: [String: String]
    /// When the expanding store stopped syncing it (gone from the remote, or left out by its
    /// filter) while rows of it are kept; nil while it is synced.
    public var goneSince: Date?

    public init(store: String, expandingStore: String, url: String, kindName: String, attributes: [String: String] = [:],
                goneSince: Date? = nil) {
        self.store = store
        self.expandingStore = expandingStore
        self.url = url
        self.kindName = kindName
        self.attributes = attributes
        self.goneSince = goneSince
    }

    /// The kind the member syncs as; nil for one this Ferry does not know.
    public var kind: StoreKind? { StoreKind(rawValue: kindName) }

    /// The table each of `members` has, by URL: the names a member keeps.
    public static func tables(byURL members: [ExpandedMember]) -> [String: String] {
        Dictionary(members.map { ($0.url, $0.store) }, uniquingKeysWith: { first, _ in first })
    }

    /// ``attributes`` as the replica stores them: a JSON object with sorted keys.
    var storedAttributes: String {
        let data = try? JSONSerialization.data(withJSONObject: attributes, options: [.sortedKeys])
        return String(decoding: data ?? Data("{}".utf8), as: UTF8.self)
    }

    static func attributes(stored: String?) -> [String: String] {
        guard let stored, let object = try? JSONSerialization.jsonObject(with: Data(stored.utf8)) as? [String: Any] else { return [:] }
        return object.compactMapValues { $0 as? String }
    }
}

extension ReplicaDatabase {
    /// The members recorded for `expandingStore` (every expanding store's when nil), synced
    /// ones and kept ones, in name order.
    public func expandedMembers(of expandingStore: String? = nil) throws(StoreError) -> [ExpandedMember] {
        do {
            let sql = "SELECT store, expanding_store, url, kind, attributes, gone_since FROM ferry_members"
                + (expandingStore == nil ? "" : " WHERE expanding_store = ?1") + " ORDER BY store"
            let statement = try connection.prepare(sql)
            if let expandingStore { try statement.bind(expandingStore, at: 1) }
            var members: [ExpandedMember] = []
            while try statement.step() {
                members.append(ExpandedMember(
                    store: statement.string(at: 0) ?? "", expandingStore: statement.string(at: 1) ?? "", url: statement.string(at: 2) ?? "",
                    kindName: statement.string(at: 3) ?? "", attributes: ExpandedMember.attributes(stored: statement.string(at: 4)),
                    goneSince: statement.isNull(at: 5) ? nil : Date(timeIntervalSince1970: statement.double(at: 5))))
            }
            return members
        } catch { throw StoreError(error, path: path, store: expandingStore ?? "") }
    }

    /// Gives an expanding store its sync-state row (it has no table), so its passes are
    /// recorded and `ferry status` shows it like any store.
    public func registerExpandingStore(_ store: String) throws(StoreError) {
        requireWritable()
        do {
            let row = try connection.prepare("INSERT INTO ferry_sync_state(store) VALUES (?1) ON CONFLICT(store) DO NOTHING")
            try row.bind(store, at: 1)
            try row.run()
        } catch { throw StoreError(error, path: path, store: store) }
    }

    /// Records that `expandingStore` syncs `members` now (their tables prepared already), in
    /// one transaction: new ones are added, known ones get their current URL and attributes and
    /// lose any `gone_since`.
    public func recordMembers(_ members: [ExpandedMember], of expandingStore: String, at date: Date) throws(StoreError) {
        requireWritable()
        let now = date.timeIntervalSince1970
        do {
            try connection.transaction { () throws(SQLiteError) in
                let upsert = try connection.prepare("""
                    INSERT INTO ferry_members(store, expanding_store, url, kind, attributes, first_seen, last_seen)
                    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)
                    ON CONFLICT(store) DO UPDATE SET expanding_store = excluded.expanding_store, url = excluded.url, kind = excluded.kind,
                        attributes = excluded.attributes, last_seen = excluded.last_seen, gone_since = NULL
                    """)
                for member in members {
                    try upsert.bind(member.store, at: 1)
                    try upsert.bind(expandingStore, at: 2)
                    try upsert.bind(member.url, at: 3)
                    try upsert.bind(member.kindName, at: 4)
                    try upsert.bind(member.storedAttributes, at: 5)
                    try upsert.bind(now, at: 6)
                    try upsert.run()
                    upsert.reset()
                }
                // What `ferry status` counts for an expanding store: its members.
                let count = try connection.prepare("UPDATE ferry_sync_state SET record_count = ?2 WHERE store = ?1")
                try count.bind(expandingStore, at: 1)
                try count.bind(members.count, at: 2)
                try count.run()
            }
        } catch { throw StoreError(error, path: path, store: expandingStore) }
    }

    /// Marks a member the expanding store no longer syncs whose rows stay.
    public func markMemberGone(_ store: String, at date: Date) throws(StoreError) {
        requireWritable()
        do {
            let mark = try connection.prepare("UPDATE ferry_members SET gone_since = coalesce(gone_since, ?2) WHERE store = ?1")
            try mark.bind(store, at: 1)
            try mark.bind(date.timeIntervalSince1970, at: 2)
            try mark.run()
        } catch { throw StoreError(error, path: path, store: store) }
    }

    /// Forgets a member the expanding store no longer syncs, once nothing of it is left to
    /// keep: drops its table when it holds no rows (no tombstones either) and no local write
    /// waits in the outbox, then its record and sync state. Returns whether it was forgotten.
    public func forgetMember(_ store: String) throws(StoreError) -> Bool {
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
                try connection.execute("DELETE FROM ferry_members WHERE store = \(literal(store))")
                try connection.execute("DELETE FROM ferry_sync_state WHERE store = \(literal(store))")
                return true
            } catch { throw map(error) }
        }
        if forgotten { stores[store] = nil }
        return forgotten
    }

    /// Makes the view named after `expandingStore` show the rows of every member it syncs, with
    /// the member's store name in a first column `collection`: `SELECT * FROM personal
    /// WHERE collection = 'personal__contacts'`. Without a member the view is dropped.
    /// `columns` are the expanding store's typed columns, which every member table has.
    public func rebuildMembersView(_ account: String, columns: [TypedColumn]) throws(StoreError) {
        requireWritable()
        // Gone members whose rows are kept are part of the store until they go: the view has
        // every table the store has (`ferry_members.gone_since` tells them apart).
        let synced = try expandedMembers(of: account)
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
