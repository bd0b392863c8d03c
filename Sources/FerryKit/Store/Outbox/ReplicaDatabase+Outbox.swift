import Foundation

/// The queue of a push store's local changes (`ferry_outbox`, filled by the table's triggers)
/// as Ferry reads and empties it: what to push, what the remote answered, and what a conflict
/// does under the store's policy (``ConflictPlan``). Every method commits on its own, so a
/// crash between two answers keeps the answered ones and queues the rest.
extension ReplicaDatabase {
    /// What the outbox holds for one record (the merge's view of it).
    struct QueuedEntry: Sendable, Equatable {
        var operation: LocalOperation
        var baseVersion: String?
        var held: Bool
    }

    /// How many local changes a store has, by state.
    public struct OutboxSummary: Sendable, Equatable {
        public var queued = 0
        public var refused = 0
        public var held = 0
        /// The newest reason the remote gave for a refusal.
        public var lastRefusal: String?

        public init(queued: Int = 0, refused: Int = 0, held: Int = 0, lastRefusal: String? = nil) {
            self.queued = queued
            self.refused = refused
            self.held = held
            self.lastRefusal = lastRefusal
        }

        public var isEmpty: Bool { queued == 0 && refused == 0 && held == 0 }
    }

    func storeID(of store: String) throws(SQLiteError) -> Int64? {
        if let prepared = stores[store] { return prepared.storeID }
        let lookup = try connection.prepare("SELECT store_id FROM ferry_stores WHERE name = ?1")
        try lookup.bind(store, at: 1)
        return try lookup.step() ? lookup.int64(at: 0) : nil
    }

    /// The store's queue as the merge needs it; empty (and one index probe) for a store with
    /// nothing queued, the common case.
    func queuedEntries(of prepared: PreparedStore) throws(SQLiteError) -> [String: QueuedEntry] {
        let statement = try connection.prepare("SELECT id, op, base_version, state FROM ferry_outbox WHERE store_id = ?1")
        try statement.bind(prepared.storeID, at: 1)
        var entries: [String: QueuedEntry] = [:]
        while try statement.step() {
            entries[statement.string(at: 0) ?? ""] = QueuedEntry(
                operation: LocalOperation(rawValue: statement.int64(at: 1)) ?? .update, baseVersion: statement.string(at: 2),
                held: statement.int64(at: 3) == OutboxState.held.rawValue)
        }
        return entries
    }

    /// Queued changes to push, oldest first: neither refused nor held. Held conflicts a person
    /// resolved are applied first (``applyResolutions(of:)``).
    public func queuedLocalChanges(of store: String, limit: Int = 10_000) throws(StoreError) -> [LocalChange] {
        do {
            guard let storeID = try storeID(of: store) else { return [] }
            let statement = try connection.prepare("""
                SELECT o.id, o.op, o.base_version, o.base_body, t.body, o.generation, o.sent, o.sent_version, o.sent_body,
                       o.removed_seen IS NOT NULL, o.sent < (SELECT last_success FROM ferry_sync_state WHERE store = ?3)
                FROM ferry_outbox o LEFT JOIN \(quoted(store)) t ON t.id = o.id
                WHERE o.store_id = ?1 AND o.state = \(OutboxState.queued.sql) ORDER BY o.queued, o.id LIMIT ?2
                """)
            try statement.bind(storeID, at: 1)
            try statement.bind(limit, at: 2)
            try statement.bind(store, at: 3)
            var changes: [LocalChange] = []
            while try statement.step() {
                let operation = LocalOperation(rawValue: statement.int64(at: 1)) ?? .update
                var change = LocalChange(
                    id: statement.string(at: 0) ?? "", operation: operation, baseVersion: statement.string(at: 2),
                    baseBody: statement.string(at: 3), body: operation == .delete ? nil : statement.string(at: 4),
                    generation: statement.int64(at: 5), sent: statement.isNull(at: 6) ? nil : Date(timeIntervalSince1970: statement.double(at: 6)))
                change.sentVersion = statement.string(at: 7)
                change.sentBody = statement.string(at: 8)
                change.removedSinceSent = statement.int64(at: 9) != 0
                change.pulledSinceSent = statement.int64(at: 10) != 0
                changes.append(change)
            }
            return changes
        } catch { throw StoreError(error, path: path, store: store) }
    }

    /// The store's queue by state, for `ferry status` and the pass report.
    public func outboxSummary(of store: String) throws(StoreError) -> OutboxSummary {
        do {
            guard let storeID = try storeID(of: store) else { return OutboxSummary() }
            let statement = try connection.prepare("""
                SELECT coalesce(sum(state = \(OutboxState.queued.sql)), 0), coalesce(sum(state = \(OutboxState.refused.sql)), 0),
                       coalesce(sum(state = \(OutboxState.held.sql)), 0),
                       (SELECT last_error FROM ferry_outbox WHERE store_id = ?1 AND state = \(OutboxState.refused.sql) ORDER BY changed DESC LIMIT 1)
                FROM ferry_outbox WHERE store_id = ?1
                """)
            try statement.bind(storeID, at: 1)
            guard try statement.step() else { return OutboxSummary() }
            return OutboxSummary(queued: Int(statement.int64(at: 0)), refused: Int(statement.int64(at: 1)),
                                 held: Int(statement.int64(at: 2)), lastRefusal: statement.string(at: 3))
        } catch { throw StoreError(error, path: path, store: store) }
    }

    /// How the store's local writes leave the replica differing from the remote when a pass
    /// ends: queued (written while it ran, or put off), held or refused; none for a store that
    /// does not push. `queued` gets the count of those queued.
    func unpushedGaps(of store: StoreConfiguration, queued: inout Int) throws(StoreError) -> [ReplicaGap] {
        guard store.writeBack.push else { return [] }
        let outbox = try outboxSummary(of: store.name)
        queued = outbox.queued
        guard !outbox.isEmpty else { return [] }
        return [.localChangesNotPushed(queued: outbox.queued, held: outbox.held, refused: outbox.refused, reason: outbox.lastRefusal)]
    }

    /// Records that a create is about to be sent, with what is sent: after a crash the next
    /// push finds `sent` set and looks the record up before creating it again. False when the
    /// create is no longer queued (its row was deleted before it was ever sent): then it must
    /// not be sent at all. `remoteID`: the id the create names the record with, when the client
    /// chooses it (kept in `sent_version`, so every later send names the same record).
    @discardableResult
    public func noteCreateSent(_ change: LocalChange, body: String, remoteID: String? = nil, of store: String, at date: Date) throws(StoreError) -> Bool {
        requireWritable()
        do {
            guard let storeID = try storeID(of: store) else { return false }
            let statement = try connection.prepare("UPDATE ferry_outbox SET sent = ?3, base_body = ?4, sent_version = coalesce(?5, sent_version), removed_seen = NULL, attempts = attempts + 1 WHERE store_id = ?1 AND id = ?2 AND op = 1")
            try statement.bind(storeID, at: 1)
            try statement.bind(change.id, at: 2)
            try statement.bind(Self.timestamp(date), at: 3)
            try statement.bind(body, at: 4)
            try statement.bind(remoteID, at: 5)
            try statement.run()
            return connection.changes > 0
        } catch { throw StoreError(error, path: path, store: store, recordID: change.id) }
    }

    /// Records that updates are about to be sent, each computed against the remote version
    /// given and with the body it carries, in one transaction: after a crash or a lost answer
    /// the next push compares what the remote holds with what was sent (the remote holding it
    /// is that send, landed), and can tell whether a send that was not idempotent (a Parse
    /// Increment) may have applied already.
    public func noteUpdatesSent(_ sends: [UpdateSend], of store: String, at date: Date) throws(StoreError) {
        requireWritable()
        guard !sends.isEmpty else { return }
        do {
            guard let storeID = try storeID(of: store) else { return }
            try connection.transaction { () throws(SQLiteError) in
                let statement = try connection.prepare("""
                    UPDATE ferry_outbox SET sent = ?3, sent_version = ?4, sent_body = ?5, attempts = attempts + 1 WHERE store_id = ?1 AND id = ?2
                    """)
                for send in sends {
                    statement.reset()
                    try statement.bind(storeID, at: 1)
                    try statement.bind(send.change.id, at: 2)
                    try statement.bind(Self.timestamp(date), at: 3)
                    try statement.bind(send.remoteVersion, at: 4)
                    try statement.bind(send.body, at: 5)
                    try statement.run()
                }
            }
        } catch { throw StoreError(error, path: path, store: store) }
    }

    /// Merges the remote's answers to pushed changes, all in one transaction: each row takes
    /// the remote's id, version and body, its entry leaves the queue (unless a newer local
    /// write arrived meanwhile: then it stays, rebased on the new version), and the change log
    /// gets the change as a local one. A conflict goes to the store's policy; a refusal stays
    /// queued as refused with its reason. Returns each change's conflict resolution, if any.
    ///
    /// `confirmingCreates`: the kind learns deletions from a diff against its cursor (a DAV
    /// sync token), and a diff from a cursor older than a create may leave out a member made
    /// and deleted since. Each created record then waits in `ferry_pending_records` until a
    /// pull reads it, or its absence, by id.
    public func recordPushes(_ results: [(change: LocalChange, result: PushResult)], of store: String,
                             at date: Date, confirmingCreates: Bool = false) throws(StoreError) -> [ConflictPlan.Resolution?] {
        requireWritable()
        let prepared = try preparedStore(store)
        let now = Self.timestamp(date)
        var current = ""
        do {
            return try connection.transaction { () throws(SQLiteError) -> [ConflictPlan.Resolution?] in
                var resolutions: [ConflictPlan.Resolution?] = []
                resolutions.reserveCapacity(results.count)
                for (change, result) in results {
                    current = change.id
                    resolutions.append(try record(change, result, in: prepared, at: now, confirmingCreates: confirmingCreates))
                }
                return resolutions
            }
        } catch { throw StoreError(error, path: path, store: store, recordID: current.isEmpty ? nil : current) }
    }

    /// One change's answer (``recordPushes(_:of:at:)``).
    @discardableResult
    public func recordPush(_ change: LocalChange, result: PushResult, of store: String, at date: Date) throws(StoreError) -> ConflictPlan.Resolution? {
        try recordPushes([(change, result)], of: store, at: date)[0]
    }

    private func record(_ change: LocalChange, _ result: PushResult, in prepared: PreparedStore, at now: Double,
                        confirmingCreates: Bool) throws(SQLiteError) -> ConflictPlan.Resolution? {
        switch result {
        case .refused(let reason):
            // A refusal is the remote's whole answer: the send made nothing there, so nothing
            // of it is looked for (or waited for) when the fixed row goes out again.
            let refuse = try connection.prepare("""
                UPDATE ferry_outbox SET state = \(OutboxState.refused.sql), last_error = ?3, attempts = attempts + 1, sent = NULL, sent_body = NULL
                WHERE store_id = ?1 AND id = ?2
                """)
            try refuse.bind(prepared.storeID, at: 1)
            try refuse.bind(change.id, at: 2)
            try refuse.bind(reason, at: 3)
            try refuse.run()
            return nil
        case .accepted(let record):
            try accept(change, record: record, madeNow: change.operation == .create && change.sent == nil, in: prepared, at: now)
            if confirmingCreates, change.operation == .create, let record { try awaitConfirmation(of: record.id, in: prepared, at: now) }
            return nil
        case .acceptedEarlierSend(let record, let sent):
            try accept(change, record: record, keepingLocalBody: true, in: prepared, at: now)
            if confirmingCreates, change.operation == .create { try awaitConfirmation(of: record.id, in: prepared, at: now) }
            if let sent {
                // Based on what was sent, at no version the remote has: the next push compares
                // all three (sent, the row, the remote now).
                let base = try connection.prepare("UPDATE ferry_outbox SET base_version = '', base_body = ?3 WHERE store_id = ?1 AND id = ?2")
                try base.bind(prepared.storeID, at: 1)
                try base.bind(record.id, at: 2)
                try base.bind(sent, at: 3)
                try base.run()
            }
            return nil
        case .conflict(let remote):
            var id = change.id
            // A create that met a record another writer made under the id it chose (a vCard's
            // UID, a client objectId): the placeholder becomes that record's row before anything
            // is decided, so every outcome ends in one row per remote record.
            if let remote, remote.id != change.id, change.operation == .create {
                try adoptRemoteID(remote.id, for: change.id, in: prepared)
                id = remote.id
            }
            guard let entry = try queuedEntries(of: prepared)[id] else { return nil }
            let outcome = ConflictPlan.outcome(
                local: entry.operation, base: entry.baseVersion, held: entry.held,
                remote: remote.map { .upsert(version: $0.version) } ?? .delete,
                comparison: prepared.definition.comparison, policy: prepared.definition.writeBack.conflict)
            switch try settle(ConflictPlan.saidChanged(outcome, policy: prepared.definition.writeBack.conflict,
                                                       localDeleted: entry.operation == .delete, remoteDeleted: remote == nil),
                              id: id, entry: entry, remote: remote, in: prepared, at: now) {
            case .conflict(let resolution): return resolution
            case .refreshHeld: return .hold
            case .keepLocal, .bothDeleted: return nil
            }
        }
    }

    /// `keepingLocalBody`: the remote holds an earlier send; the row's body is newer and stays
    /// queued on top of it.
    private func accept(_ change: LocalChange, record: RemoteRecord?, keepingLocalBody: Bool = false, madeNow: Bool = false,
                        in prepared: PreparedStore, at now: Double) throws(SQLiteError) {
        let table = quoted(prepared.definition.name)
        let read = try connection.prepare("SELECT generation FROM ferry_outbox WHERE store_id = ?1 AND id = ?2")
        try read.bind(prepared.storeID, at: 1)
        try read.bind(change.id, at: 2)
        let generation: Int64? = try read.step() ? read.int64(at: 0) : nil
        read.reset()
        var newerLocalWrite = keepingLocalBody || generation.map { $0 != change.generation } ?? false
        let finalID = record?.id ?? change.id
        if let record {
            // The remote assigned the id: the placeholder row and its entry take it (or fold into
            // the record's own row, written here later, which then stays queued on top).
            if record.id != change.id,
               !(try adoptRemoteID(record.id, for: change.id, in: prepared, madeNow: madeNow, at: now)) { newerLocalWrite = true }
            // A newer local write keeps its body; the version is the remote's either way, so
            // the next push of it is conditional on what this one made.
            let sql = newerLocalWrite
                ? "UPDATE \(table) SET version = ?2, last_synced = ?5 WHERE id = ?1"
                : "UPDATE \(table) SET version = ?2, body = ?3, fields = ?4, last_synced = ?5, deleted = 0 WHERE id = ?1"
            let write = try connection.prepare(sql)
            try write.bind(record.id, at: 1)
            try write.bind(record.version, at: 2)
            if !newerLocalWrite {
                try write.bindText(utf8: record.body, at: 3)
                try write.bind(Self.encodeFields(record.fields), at: 4)
            }
            try write.bind(now, at: 5)
            try write.run()
        }
        let exists = try connection.prepare("SELECT 1 FROM \(table) WHERE id = ?1")
        try exists.bind(finalID, at: 1)
        let rowExists = try exists.step()
        exists.reset()
        if OutboxFold.staysAfterAcceptedSend(newerLocalWrite: newerLocalWrite, remoteHasRecord: record != nil, rowExists: rowExists) {
            // Still queued: based on what the remote now holds. The row gone meanwhile (deleted
            // while its create or update was in flight) is a delete of that; an accepted delete
            // followed by a local insert of the same id is a create again.
            let base = try record.flatMap { record throws(SQLiteError) in
                try rebasedOnEarlierSend(change, record: record, keepingLocalBody: keepingLocalBody, in: prepared)
            }
            let fold = OutboxFold.sql(OutboxFold.queuedOperation, OutboxFold.operation("?5"), OutboxFold.truth("?6 <> 0")) {
                OutboxFold.afterAcceptedSend(queued: $0, sent: $1, rowExists: $2)
            }
            let rebase = try connection.prepare("""
                UPDATE ferry_outbox SET base_version = ?3, base_body = ?4, sent = NULL, sent_version = NULL, sent_body = NULL, op = \(fold)
                WHERE store_id = ?1 AND id = ?2
                """)
            try rebase.bind(prepared.storeID, at: 1)
            try rebase.bind(finalID, at: 2)
            try rebase.bind(record?.version, at: 3)
            if let base {
                try rebase.bind(base, at: 4)
            } else if let record {
                try rebase.bindText(utf8: record.body, at: 4)
            } else {
                try rebase.bindNull(at: 4)
            }
            try rebase.bind(change.operation.rawValue, at: 5)
            try rebase.bind(rowExists ? Int64(1) : 0, at: 6)
            try rebase.run()
        } else {
            try dropEntry(finalID, of: prepared)
        }
        // The log follows what the remote took: a pushed delete, or a pushed create or update
        // (even when its row was deleted meanwhile: that delete, queued now, is logged when
        // pushed). A create undone before the remote had it leaves no trace.
        switch change.operation {
        // A delete whose record held an earlier send of ours is not done yet: it goes out next,
        // based on what that send made.
        case .delete where keepingLocalBody: break
        case .delete: try logChange(.delete, id: finalID, local: true, of: prepared, at: now)
        case .create where record != nil: try logChange(.insert, id: finalID, local: true, of: prepared, at: now)
        case .update where record != nil: try logChange(.update, id: finalID, local: true, of: prepared, at: now)
        case .create, .update: break
        }
        if change.operation != .update { try noteLiveRowsChanged(of: prepared.definition.name) }
    }

    /// The base of a JSON row kept on top of an earlier send of its change that landed
    /// (``PushResult/acceptedEarlierSend(_:sent:)``): the members the row changed since that
    /// send take the record's values, the others the row's own (``LocalRebase``), so the next
    /// push carries the row's edits and nothing it merely still holds from before the send. The
    /// record's body as the base would have the push set back every member the API wrote itself
    /// (an `updated_at` it stamps), and after that push's answer was lost, the record holding it
    /// under a newer stamp would read as another writer's change. Nil: the record's body.
    private func rebasedOnEarlierSend(_ change: LocalChange, record: RemoteRecord, keepingLocalBody: Bool,
                                      in prepared: PreparedStore) throws(SQLiteError) -> String? {
        guard keepingLocalBody, prepared.definition.localBody == .jsonObject else { return nil }
        let sent = change.operation == .create ? change.baseBody : change.sentBody
        guard let sent, let row = try rowBody(record.id, of: prepared) else { return nil }
        return LocalRebase.base(remote: String(decoding: record.body, as: UTF8.self), original: sent, local: row)
    }

    /// A placeholder row (a local create) becomes the row of the remote record `remoteID`:
    /// the row and its outbox entry take the id. A row a pull already made of that record is the
    /// remote's copy and gives way (the remote's side is in the answer or the conflict). If
    /// that row had an update of its own queued, the two local writes are of one record: the
    /// one written last stays, as a later write to one row would have replaced the other. A
    /// queued delete of that id gives way: it deleted a record the server no longer has under
    /// that id (a server that hands a deleted record's id to a new one), or one the new row
    /// replaces.
    /// Returns false when the record's own row stayed (its local change was the later one).
    ///
    /// `madeNow`: the remote made the record just now, for this create (not an earlier send of
    /// it, nor another writer's record under an id the create chose). A row of ours at that id
    /// then stood for another record, one the remote no longer has: a server that hands a
    /// deleted record's id to a new one. That row's queued write is no write to the new record:
    /// it moves to a placeholder of its own and meets the delete as any write meets one
    /// (``settleOnDeletedRecord(_:in:at:)``), and the new record takes the id.
    @discardableResult
    func adoptRemoteID(_ remoteID: String, for placeholder: String, in prepared: PreparedStore, madeNow: Bool = false,
                       at now: Double = Date().timeIntervalSince1970) throws(SQLiteError) -> Bool {
        let table = quoted(prepared.definition.name)
        if madeNow, let moved = try moveAside(remoteID, in: prepared) {
            try settleOnDeletedRecord(moved, in: prepared, at: now)
        }
        let entries = try connection.prepare("""
            SELECT id, changed FROM ferry_outbox WHERE store_id = ?1 AND id IN (?2, ?3) AND op <> \(LocalOperation.delete.sql)
            """)
        try entries.bind(prepared.storeID, at: 1)
        try entries.bind(placeholder, at: 2)
        try entries.bind(remoteID, at: 3)
        var changed: [String: Double] = [:]
        while try entries.step() { changed[entries.string(at: 0) ?? ""] = entries.double(at: 1) }
        entries.reset()
        if let theirs = changed[remoteID], let ours = changed[placeholder], theirs > ours {
            // The record's own row was written after the placeholder: it stays, and the
            // placeholder's create folds into it.
            try dropEntry(placeholder, of: prepared)
            let drop = try connection.prepare("DELETE FROM \(table) WHERE id = ?1")
            try drop.bind(placeholder, at: 1)
            try drop.run()
            return false
        }
        try dropEntry(remoteID, of: prepared)
        let pulled = try connection.prepare("DELETE FROM \(table) WHERE id = ?1")
        try pulled.bind(remoteID, at: 1)
        try pulled.run()
        try renameRow(placeholder, to: remoteID, in: prepared)
        return true
    }

    /// The row `id` and its outbox entry take the id `newID`.
    private func renameRow(_ id: String, to newID: String, in prepared: PreparedStore) throws(SQLiteError) {
        let rename = try connection.prepare("UPDATE \(quoted(prepared.definition.name)) SET id = ?2 WHERE id = ?1")
        try rename.bind(id, at: 1)
        try rename.bind(newID, at: 2)
        try rename.run()
        let renameEntry = try connection.prepare("UPDATE ferry_outbox SET id = ?3 WHERE store_id = ?1 AND id = ?2")
        try renameEntry.bind(prepared.storeID, at: 1)
        try renameEntry.bind(id, at: 2)
        try renameEntry.bind(newID, at: 3)
        try renameEntry.run()
    }

    /// Moves the row `id` and its queued non-delete write to a fresh placeholder id; nil (and
    /// nothing moved) when `id` has no such write.
    private func moveAside(_ id: String, in prepared: PreparedStore) throws(SQLiteError) -> String? {
        let entry = try connection.prepare("""
            SELECT 1 FROM ferry_outbox WHERE store_id = ?1 AND id = ?2 AND op <> \(LocalOperation.delete.sql)
            """)
        try entry.bind(prepared.storeID, at: 1)
        try entry.bind(id, at: 2)
        let queued = try entry.step()
        entry.reset()
        guard queued else { return nil }
        let fresh = "local-" + (0..<10).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        try renameRow(id, to: fresh, in: prepared)
        return fresh
    }

    /// A queued write whose record the remote deleted (found out other than by pushing it):
    /// decided by the store's conflict policy as a push that met the delete would be.
    private func settleOnDeletedRecord(_ id: String, in prepared: PreparedStore, at now: Double) throws(SQLiteError) {
        guard let entry = try queuedEntries(of: prepared)[id] else { return }
        let policy = prepared.definition.writeBack.conflict
        let outcome = ConflictPlan.outcome(local: entry.operation, base: entry.baseVersion, held: entry.held, remote: .delete,
                                           comparison: prepared.definition.comparison, policy: policy)
        try settle(ConflictPlan.saidChanged(outcome, policy: policy, localDeleted: entry.operation == .delete, remoteDeleted: true),
                   id: id, entry: entry, remote: nil, in: prepared, at: now)
    }

    /// A local delete the remote made too: nothing to push, and the log records the delete the
    /// local write made. A conflict held over the record (the delete had met a remote update)
    /// has nothing left to decide: it is closed as settled by the remote, whose delete agrees.
    func settleBothDeleted(_ id: String, of prepared: PreparedStore, at now: Double) throws(SQLiteError) {
        try dropEntry(id, of: prepared)
        let close = try connection.prepare("""
            UPDATE ferry_conflicts SET resolution = ?3, resolved = ?4 WHERE store_id = ?1 AND id = ?2 AND resolved IS NULL
            """)
        try close.bind(prepared.storeID, at: 1)
        try close.bind(id, at: 2)
        try close.bind(ConflictPlan.Resolution.takeRemote.rawValue, at: 3)
        try close.bind(now, at: 4)
        try close.run()
        try logChange(.delete, id: id, local: true, of: prepared, at: now)
    }

    func dropEntry(_ id: String, of prepared: PreparedStore) throws(SQLiteError) {
        let drop = try connection.prepare("DELETE FROM ferry_outbox WHERE store_id = ?1 AND id = ?2")
        try drop.bind(prepared.storeID, at: 1)
        try drop.bind(id, at: 2)
        try drop.run()
    }

    /// A change-log row outside a merge's buffer: a pushed local write (`local`: origin 1) or
    /// a remote change a conflict's resolution applied, at the log's next sequence.
    func logChange(_ operation: ChangeLogBuffer.Operation, id: String, local: Bool, of prepared: PreparedStore, at now: Double) throws(SQLiteError) {
        let statement = try connection.prepare("INSERT INTO ferry_change_log(seq, store_id, id, op, time, origin) VALUES ((\(ChangeLogBuffer.nextSequenceSQL)), ?1, ?2, ?3, ?4, ?5)")
        try statement.bind(prepared.storeID, at: 1)
        try statement.bind(id, at: 2)
        try statement.bind(operation.rawValue, at: 3)
        try statement.bind(now, at: 4)
        if local { try statement.bind(Int64(1), at: 5) } else { try statement.bindNull(at: 5) }
        try statement.run()
    }

    /// Push stores among `stores` with local changes to push (or conflict resolutions to carry
    /// out), or nil when no other program committed anything since the last call: one pragma,
    /// so ferryd can ask every second.
    public func storesWithLocalWrites(among stores: Set<String>) throws(StoreError) -> Set<String>? {
        do {
            let version = try connection.scalarInt("PRAGMA data_version") ?? 0
            guard version != lastDataVersion else { return nil }
            lastDataVersion = version
            guard !stores.isEmpty else { return [] }
            let names = try connection.textRows("""
                SELECT s.name FROM ferry_outbox o JOIN ferry_stores s ON s.store_id = o.store_id WHERE o.state = \(OutboxState.queued.sql)
                UNION SELECT s.name FROM ferry_conflicts c JOIN ferry_stores s ON s.store_id = c.store_id
                    WHERE c.resolved IS NULL AND c.resolution IS NOT NULL
                """)
            return Set(names).intersection(stores)
        } catch { throw StoreError(error, path: path) }
    }
}
