import Foundation

/// Conflicts: a local change and a remote change that met on one record. Each is recorded in
/// `ferry_conflicts` with both sides whatever the policy, and carried out as
/// ``ConflictPlan/Resolution`` says; a held one waits for `resolution` to be set (by
/// `ferry conflicts resolve` or by SQL) and is carried out by the store's next push.
extension ReplicaDatabase {
    /// One recorded conflict, for `ferry conflicts` and `ferry status`.
    public struct Conflict: Sendable, Equatable {
        public var conflictID: Int64
        public var store: String
        public var id: String
        public var detected: Date
        public var localOperation: LocalOperation
        public var localBody: String?
        public var remoteVersion: String?
        public var remoteBody: String?
        public var policy: String
        /// `local`, `remote` or `both`; nil while held.
        public var resolution: String?
        public var resolved: Date?
    }

    /// Carries out a conflict's resolution inside the caller's transaction.
    func resolve(_ id: String, entry: QueuedEntry, remote: RemoteRecord?, resolution: ConflictPlan.Resolution,
                 in prepared: PreparedStore, at now: Double) throws(SQLiteError) {
        let definition = prepared.definition
        let local = try rowBody(id, of: prepared)
        let conflict = try connection.prepare("""
            INSERT INTO ferry_conflicts(store_id, id, detected, local_op, base_version, local_body, remote_version, remote_body,
                                        policy, resolution, resolved, remote_fields)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
            """)
        try conflict.bind(prepared.storeID, at: 1)
        try conflict.bind(id, at: 2)
        try conflict.bind(now, at: 3)
        try conflict.bind(entry.operation.rawValue, at: 4)
        try conflict.bind(entry.baseVersion, at: 5)
        try conflict.bind(entry.operation == .delete ? nil : local, at: 6)
        try conflict.bind(remote?.version, at: 7)
        if let remote { try conflict.bindText(utf8: remote.body, at: 8) } else { try conflict.bindNull(at: 8) }
        try conflict.bind(definition.writeBack.conflict.rawValue, at: 9)
        if resolution == .hold {
            try conflict.bindNull(at: 10)
            try conflict.bindNull(at: 11)
        } else {
            try conflict.bind(resolution.rawValue, at: 10)
            try conflict.bind(now, at: 11)
        }
        try conflict.bind(Self.encodeFields(remote?.fields), at: 12)
        try conflict.run()
        try carryOut(resolution, id: id, entry: entry, localBody: local, remote: remote, in: prepared, at: now)
    }

    private func carryOut(_ resolution: ConflictPlan.Resolution, id: String, entry: QueuedEntry, localBody: String?, remote: RemoteRecord?,
                          in prepared: PreparedStore, at now: Double) throws(SQLiteError) {
        switch ConflictPlan.effective(resolution, localDeleted: entry.operation == .delete, remoteDeleted: remote == nil) {
        case .hold:
            let hold = try connection.prepare("UPDATE ferry_outbox SET state = \(OutboxState.held.sql) WHERE store_id = ?1 AND id = ?2")
            try hold.bind(prepared.storeID, at: 1)
            try hold.bind(id, at: 2)
            try hold.run()
        case .takeRemote:
            try dropEntry(id, of: prepared)
            try writeRemote(remote, id: id, in: prepared, at: now)
        case .rebaseLocal:
            // Pushed over the version just seen: still conditional, so a third writer is noticed.
            let base = try remote.flatMap { remote throws(SQLiteError) in
                try rebasedBase(id, entry: entry, localBody: localBody, remote: remote, of: prepared)
            }
            let fold = OutboxFold.sql(OutboxFold.queuedOperation, OutboxFold.truth("?3 IS NOT NULL")) {
                OutboxFold.afterLocalWin(queued: $0, remoteExists: $1)
            }
            let rebase = try connection.prepare("""
                UPDATE ferry_outbox SET state = \(OutboxState.queued.sql), last_error = NULL, sent = NULL, sent_version = NULL, sent_body = NULL, base_version = ?3, base_body = ?4,
                    op = \(fold)
                WHERE store_id = ?1 AND id = ?2
                """)
            try rebase.bind(prepared.storeID, at: 1)
            try rebase.bind(id, at: 2)
            try rebase.bind(remote?.version, at: 3)
            if let base {
                try rebase.bind(base, at: 4)
            } else if let remote {
                try rebase.bindText(utf8: remote.body, at: 4)
            } else {
                try rebase.bindNull(at: 4)
            }
            try rebase.run()
            let version = try connection.prepare("UPDATE \(quoted(prepared.definition.name)) SET version = ?2 WHERE id = ?1")
            try version.bind(id, at: 1)
            try version.bind(remote?.version ?? "", at: 2)
            try version.run()
        case .keepBoth:
            if let localBody, entry.operation != .delete {
                // A placeholder id, from the table's own default (as a local insert gets).
                let insert = try connection.prepare("""
                    INSERT INTO \(quoted(prepared.definition.name))(body, first_seen) VALUES (?1, ?2) RETURNING id
                    """)
                try insert.bind(prepared.definition.localBody.asNewRecord(localBody, droppingFields: prepared.definition.remoteAssignedFields), at: 1)
                try insert.bind(now, at: 2)
                guard try insert.step(), let copy = insert.string(at: 0) else { preconditionFailure("INSERT ... RETURNING id returned no row") }
                insert.reset()
                let queue = try connection.prepare("INSERT INTO ferry_outbox(store_id, id, op, queued, changed) VALUES (?1, ?2, \(LocalOperation.create.sql), ?3, ?3)")
                try queue.bind(prepared.storeID, at: 1)
                try queue.bind(copy, at: 2)
                try queue.bind(now, at: 3)
                try queue.run()
                try noteLiveRowsChanged(of: prepared.definition.name)
            }
            try dropEntry(id, of: prepared)
            try writeRemote(remote, id: id, in: prepared, at: now)
        }
    }

    /// The open conflict of a held record takes the remote's newer side.
    func refreshHeldConflict(_ id: String, remote: RemoteRecord?, in prepared: PreparedStore) throws(SQLiteError) {
        let refresh = try connection.prepare("""
            UPDATE ferry_conflicts SET remote_version = ?3, remote_body = ?4, remote_fields = ?5
            WHERE store_id = ?1 AND id = ?2 AND resolved IS NULL
            """)
        try refresh.bind(prepared.storeID, at: 1)
        try refresh.bind(id, at: 2)
        try refresh.bind(remote?.version, at: 3)
        if let remote { try refresh.bindText(utf8: remote.body, at: 4) } else { try refresh.bindNull(at: 4) }
        try refresh.bind(Self.encodeFields(remote?.fields), at: 5)
        try refresh.run()
    }

    /// A JSON update's new base (``LocalRebase``); nil keeps the remote's body as the base.
    private func rebasedBase(_ id: String, entry: QueuedEntry, localBody: String?, remote: RemoteRecord,
                             of prepared: PreparedStore) throws(SQLiteError) -> String? {
        guard prepared.definition.localBody == .jsonObject, entry.operation == .update else { return nil }
        let read = try connection.prepare("SELECT base_body FROM ferry_outbox WHERE store_id = ?1 AND id = ?2")
        try read.bind(prepared.storeID, at: 1)
        try read.bind(id, at: 2)
        guard try read.step() else { return nil }
        let original = read.string(at: 0)
        read.reset()
        return LocalRebase.base(remote: String(decoding: remote.body, as: UTF8.self), original: original, local: localBody)
    }

    /// The row becomes the remote's record (or goes, by the store's deletion policy), logged as
    /// a remote change.
    private func writeRemote(_ remote: RemoteRecord?, id: String, in prepared: PreparedStore, at now: Double) throws(SQLiteError) {
        let table = quoted(prepared.definition.name)
        if let remote {
            let present = try connection.prepare("SELECT 1 FROM \(table) WHERE id = ?1 AND deleted = 0")
            try present.bind(id, at: 1)
            let existed = try present.step()
            present.reset()
            let upsert = try connection.prepare("""
                INSERT INTO \(table)(id, version, body, fields, first_seen, last_synced, deleted) VALUES (?1, ?2, ?3, ?4, ?5, ?5, 0)
                ON CONFLICT(id) DO UPDATE SET version = excluded.version, body = excluded.body, fields = excluded.fields,
                    last_synced = excluded.last_synced, deleted = 0
                """)
            try upsert.bind(id, at: 1)
            try upsert.bind(remote.version, at: 2)
            try upsert.bindText(utf8: remote.body, at: 3)
            try upsert.bind(Self.encodeFields(remote.fields), at: 4)
            try upsert.bind(now, at: 5)
            try upsert.run()
            // A row deleted locally comes back: for the log, an insert.
            try logChange(existed ? .update : .insert, id: id, local: false, of: prepared, at: now)
        } else {
            let sql = prepared.definition.deletion == .hard
                ? "DELETE FROM \(table) WHERE id = ?1"
                : "UPDATE \(table) SET deleted = 1, last_synced = ?2 WHERE id = ?1"
            let remove = try connection.prepare(sql)
            try remove.bind(id, at: 1)
            if prepared.definition.deletion == .tombstone { try remove.bind(now, at: 2) }
            try remove.run()
            if connection.changes > 0 { try logChange(.delete, id: id, local: false, of: prepared, at: now) }
        }
        try noteLiveRowsChanged(of: prepared.definition.name)
    }

    /// ``encodeFields(_:)`` read back; nil for NULL or anything that is not an object of strings.
    static func decodeFields(_ text: String?) -> [String: String]? {
        guard let text, let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: String] else { return nil }
        return object
    }

    func rowBody(_ id: String, of prepared: PreparedStore) throws(SQLiteError) -> String? {
        let read = try connection.prepare("SELECT body FROM \(quoted(prepared.definition.name)) WHERE id = ?1")
        try read.bind(id, at: 1)
        return try read.step() ? read.string(at: 0) : nil
    }

    /// Carries out the resolutions people chose for held conflicts (`resolution` set, `resolved`
    /// not yet). Returns how many.
    public func applyResolutions(of store: String, at date: Date) throws(StoreError) -> Int {
        requireWritable()
        let prepared = try preparedStore(store)
        let now = Self.timestamp(date)
        do {
            return try connection.transaction { () throws(SQLiteError) -> Int in
                let chosen = try connection.prepare("""
                    SELECT conflict_id, id, resolution, remote_version, remote_body, remote_fields FROM ferry_conflicts
                    WHERE store_id = ?1 AND resolved IS NULL AND resolution IS NOT NULL ORDER BY conflict_id
                    """)
                try chosen.bind(prepared.storeID, at: 1)
                var rows: [(Int64, String, String, String?, String?, String?)] = []
                while try chosen.step() {
                    rows.append((chosen.int64(at: 0), chosen.string(at: 1) ?? "", chosen.string(at: 2) ?? "", chosen.string(at: 3), chosen.string(at: 4),
                                 chosen.string(at: 5)))
                }
                chosen.reset()
                let entries = try queuedEntries(of: prepared)
                for (conflictID, id, chosenResolution, remoteVersion, remoteBody, remoteFields) in rows {
                    if let entry = entries[id], let resolution = ConflictPlan.Resolution(rawValue: chosenResolution) {
                        let remote = remoteVersion.map {
                            RemoteRecord(id: id, version: $0, body: Data((remoteBody ?? "").utf8), fields: Self.decodeFields(remoteFields))
                        }
                        try carryOut(resolution, id: id, entry: entry, localBody: try rowBody(id, of: prepared), remote: remote,
                                     in: prepared, at: now)
                    }
                    let done = try connection.prepare("UPDATE ferry_conflicts SET resolved = ?2 WHERE conflict_id = ?1")
                    try done.bind(conflictID, at: 1)
                    try done.bind(now, at: 2)
                    try done.run()
                }
                return rows.count
            }
        } catch { throw StoreError(error, path: path, store: store) }
    }

    /// Conflicts of `store` (every store when nil), newest first; only open ones unless `all`.
    public func conflicts(of store: String?, all: Bool = false, limit: Int = 1000) throws(StoreError) -> [Conflict] {
        do {
            var conditions: [String] = []
            if store != nil { conditions.append("s.name = ?1") }
            if !all { conditions.append("c.resolved IS NULL") }
            let statement = try connection.prepare("""
                SELECT c.conflict_id, s.name, c.id, c.detected, c.local_op, c.local_body, c.remote_version, c.remote_body, c.policy,
                       c.resolution, c.resolved
                FROM ferry_conflicts c JOIN ferry_stores s ON s.store_id = c.store_id
                \(conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND "))
                ORDER BY c.conflict_id DESC LIMIT ?2
                """)
            if let store { try statement.bind(store, at: 1) }
            try statement.bind(limit, at: 2)
            var found: [Conflict] = []
            while try statement.step() {
                found.append(Conflict(
                    conflictID: statement.int64(at: 0), store: statement.string(at: 1) ?? "", id: statement.string(at: 2) ?? "",
                    detected: Date(timeIntervalSince1970: statement.double(at: 3)),
                    localOperation: LocalOperation(rawValue: statement.int64(at: 4)) ?? .update, localBody: statement.string(at: 5),
                    remoteVersion: statement.string(at: 6), remoteBody: statement.string(at: 7), policy: statement.string(at: 8) ?? "",
                    resolution: statement.string(at: 9), resolved: statement.isNull(at: 10) ? nil : Date(timeIntervalSince1970: statement.double(at: 10))))
            }
            return found
        } catch { throw StoreError(error, path: path, store: store) }
    }

    /// Chooses a held conflict's resolution (what `ferry conflicts resolve` does; the same as
    /// `UPDATE ferry_conflicts SET resolution = ...` in SQL). The store's next push carries it out.
    public func chooseResolution(_ resolution: ConflictPlan.Resolution, conflict conflictID: Int64) throws(StoreError) -> Bool {
        requireWritable()
        precondition(resolution != .hold, "hold is not a choice")
        do {
            let statement = try connection.prepare("UPDATE ferry_conflicts SET resolution = ?2 WHERE conflict_id = ?1 AND resolved IS NULL")
            try statement.bind(conflictID, at: 1)
            try statement.bind(resolution.rawValue, at: 2)
            try statement.run()
            return connection.changes > 0
        } catch { throw StoreError(error, path: path) }
    }
}

extension ReplicaDatabase {
    /// A remote change to a record with a queued local change (inside the batch's transaction).
    func meet(_ change: RecordChange, entry: QueuedEntry, in prepared: PreparedStore, at now: Double, counts: inout MergeCounts) throws(SQLiteError) {
        let remote: RemoteRecord? = if case .upsert(let record) = change { record } else { nil }
        let outcome = ConflictPlan.outcome(
            local: entry.operation, base: entry.baseVersion, held: entry.held,
            remote: remote.map { .upsert(version: $0.version) } ?? .delete,
            comparison: prepared.definition.comparison, policy: prepared.definition.writeBack.conflict)
        switch try settle(outcome, id: change.id, entry: entry, remote: remote, in: prepared, at: now) {
        case .keepLocal, .bothDeleted, .refreshHeld: counts.unchanged += 1
        case .conflict: counts.conflicts += 1
        }
    }

    /// Carries out what ``ConflictPlan`` decided for a queued record that met the remote's
    /// side (inside the caller's transaction): the one place its outcomes take effect, for the
    /// pull, the push and a record found deleted. Returns the outcome, for the caller's counts.
    @discardableResult
    func settle(_ outcome: ConflictPlan.Outcome, id: String, entry: QueuedEntry, remote: RemoteRecord?,
                in prepared: PreparedStore, at now: Double) throws(SQLiteError) -> ConflictPlan.Outcome {
        switch outcome {
        case .keepLocal:
            break
        case .bothDeleted:
            try settleBothDeleted(id, of: prepared, at: now)
        case .refreshHeld:
            try refreshHeldConflict(id, remote: remote, in: prepared)
        case .conflict(let resolution):
            try resolve(id, entry: entry, remote: remote, resolution: resolution, in: prepared, at: now)
        }
        return outcome
    }

    /// After a complete listing: queued records the remote no longer lists were deleted there
    /// (a create only when held over a record another writer made: its id is that record's).
    func meetSweep(_ prepared: PreparedStore, at now: Double) throws(SQLiteError) {
        let gone = try connection.prepare("""
            SELECT id FROM ferry_outbox WHERE store_id = ?1 AND (op <> \(LocalOperation.create.sql) OR state = \(OutboxState.held.sql))
                AND \(ReconciliationState.notListed(prepared.storeID, column: "ferry_outbox.id"))
            """)
        try gone.bind(prepared.storeID, at: 1)
        var ids: [String] = []
        while try gone.step() { ids.append(gone.string(at: 0) ?? "") }
        gone.reset()
        guard !ids.isEmpty else { return }
        let entries = try queuedEntries(of: prepared)
        var counts = MergeCounts()
        for id in ids {
            guard let entry = entries[id] else { continue }
            try meet(.delete(id: id), entry: entry, in: prepared, at: now, counts: &counts)
        }
    }
}
