import Foundation

extension ReplicaDatabase {
    /// A store's sync state, or nil when the store was never prepared in this file.
    public func syncState(of store: String) throws(StoreError) -> SyncState? {
        try readStates(where: "WHERE store = ?1", store: store).first
    }

    /// Every store the replica has held (configured now or not), by name.
    public func storeNames() throws(StoreError) -> [String] {
        do { return try connection.textRows("SELECT name FROM ferry_stores ORDER BY name") } catch { throw StoreError(error, path: path) }
    }

    /// Every store's sync state, by name.
    public func syncStates() throws(StoreError) -> [SyncState] {
        try readStates(where: "ORDER BY store", store: nil)
    }

    private func readStates(where clause: String, store: String?) throws(StoreError) -> [SyncState] {
        do {
            let statement = try connection.prepare(
                """
                SELECT store, cursor, last_attempt, last_success, last_error, total_inserted, total_updated, total_deleted,
                       incomplete, sweep_pending, last_swept, record_count,
                       (SELECT count(*) FROM ferry_pending_records p JOIN ferry_stores s ON s.store_id = p.store_id WHERE s.name = ferry_sync_state.store AND NOT p.read_back),
                       (SELECT count(*) FROM ferry_outbox o JOIN ferry_stores s ON s.store_id = o.store_id WHERE s.name = ferry_sync_state.store AND o.state = \(OutboxState.queued.sql)),
                       (SELECT count(*) FROM ferry_outbox o JOIN ferry_stores s ON s.store_id = o.store_id WHERE s.name = ferry_sync_state.store AND o.state = \(OutboxState.refused.sql)),
                       (SELECT count(*) FROM ferry_conflicts c JOIN ferry_stores s ON s.store_id = c.store_id WHERE s.name = ferry_sync_state.store AND c.resolved IS NULL),
                       (SELECT count(*) FROM ferry_pending_records p JOIN ferry_stores s ON s.store_id = p.store_id WHERE s.name = ferry_sync_state.store AND p.read_back),
                       (SELECT o.last_error FROM ferry_outbox o JOIN ferry_stores s ON s.store_id = o.store_id
                        WHERE s.name = ferry_sync_state.store AND o.state = \(OutboxState.refused.sql) ORDER BY o.changed DESC LIMIT 1)
                FROM ferry_sync_state \(clause)
                """)
            if let store { try statement.bind(store, at: 1) }
            var states: [SyncState] = []
            while try statement.step() {
                let date = { (index: Int32) in statement.isNull(at: index) ? nil : Date(timeIntervalSince1970: statement.double(at: index)) }
                states.append(SyncState(
                    store: statement.string(at: 0) ?? "", cursor: statement.string(at: 1), lastAttempt: date(2), lastSuccess: date(3),
                    lastError: statement.string(at: 4), recordCount: 0, totalInserted: statement.int64(at: 5),
                    totalUpdated: statement.int64(at: 6), totalDeleted: statement.int64(at: 7)))
                states[states.count - 1].incomplete = statement.string(at: 8)
                states[states.count - 1].sweepPending = statement.int64(at: 9) != 0
                states[states.count - 1].lastSwept = date(10)
                states[states.count - 1].recordCount = statement.isNull(at: 11) ? -1 : Int(statement.int64(at: 11))
                states[states.count - 1].pendingRecords = Int(statement.int64(at: 12))
                states[states.count - 1].localWritesQueued = Int(statement.int64(at: 13))
                states[states.count - 1].localWritesRefused = Int(statement.int64(at: 14))
                states[states.count - 1].openConflicts = Int(statement.int64(at: 15))
                states[states.count - 1].createsToReadBack = Int(statement.int64(at: 16))
                states[states.count - 1].lastRefusal = statement.string(at: 17)
            }
            statement.reset()
            for index in states.indices where states[index].recordCount < 0 {
                // Not stored since the last change: counted. A state row whose table is gone
                // (store removed from the configuration) counts 0.
                states[index].recordCount = (try? recordCount(of: states[index].store)) ?? 0
            }
            return states
        } catch { throw StoreError(error, path: path, store: store) }
    }

    /// Notes that a pass started.
    public func recordAttempt(of store: String, at date: Date) throws(StoreError) {
        try updateState(store, "last_attempt = ?2") { statement throws(SQLiteError) in
            try statement.bind(Self.timestamp(date), at: 2)
        }
    }

    /// Notes a successful pass: clears the last error, adds its counts to the totals, and
    /// records what the replica still lacks (`gaps`; none clears it) and whether the next pass
    /// must list every id again; `swept`: the pass swept deleted ids.
    public func recordSuccess(of store: String, at date: Date, counts: MergeCounts, gaps: [ReplicaGap] = [], swept: Bool = false) throws(StoreError) {
        try updateState(store, """
            last_success = ?2, last_error = NULL, push_error = NULL, total_inserted = total_inserted + ?3, total_updated = total_updated + ?4,
            total_deleted = total_deleted + ?5, incomplete = ?6, sweep_pending = ?7,
            last_swept = CASE WHEN ?8 THEN ?2 ELSE last_swept END
            """) { statement throws(SQLiteError) in
            try statement.bind(Self.timestamp(date), at: 2)
            try statement.bind(counts.inserted, at: 3)
            try statement.bind(counts.updated, at: 4)
            try statement.bind(counts.deleted, at: 5)
            try statement.bind(ReplicaGap.summary(gaps), at: 6)
            try statement.bind(gaps.contains(where: \.needsSweep) ? 1 : 0, at: 7)
            try statement.bind(swept ? 1 : 0, at: 8)
        }
    }

    /// Notes that a first sync began: until a pass of the store finishes, its replica is
    /// incomplete, whatever a cancellation or a failure part-way leaves behind.
    public func noteFirstSyncStarted(of store: String) throws(StoreError) {
        try updateState(store, "incomplete = ?2") { statement throws(SQLiteError) in
            try statement.bind(ReplicaGap.firstSyncUnfinished.description, at: 2)
        }
    }

    /// Notes a failed pass with a message fit for `ferry status` (no secrets: callers pass an
    /// error's `description`).
    /// `byPush`: the failure is a push-only pass's (`ferry push`), which a later push that
    /// succeeds clears (``recordPushSucceeded(of:)``).
    public func recordFailure(of store: String, at date: Date, message: String, byPush: Bool = false) throws(StoreError) {
        try updateState(store, "last_attempt = coalesce(last_attempt, ?2), last_error = ?3, push_error = ?4") { statement throws(SQLiteError) in
            try statement.bind(Self.timestamp(date), at: 2)
            try statement.bind(message, at: 3)
            if byPush { try statement.bind(Int64(1), at: 4) } else { try statement.bindNull(at: 4) }
        }
    }

    /// A push-only pass pushed: a failure an earlier push recorded is over (the remote took
    /// writes again); one a pull recorded stands until a pull succeeds.
    public func recordPushSucceeded(of store: String) throws(StoreError) {
        try updateState(store, "last_error = CASE WHEN push_error = 1 THEN NULL ELSE last_error END, push_error = NULL") { _ throws(SQLiteError) in }
    }

    /// Records a pass's failure (never a cancellation) and returns it; when the replica cannot
    /// take it (a full disk), returned with ``SyncError/unrecordedAt`` set, so the first error
    /// is not hidden by the second and the daemon publishes it elsewhere
    /// (``UnrecordedFailures``).
    public func recordingFailure(_ failure: SyncError, of store: String, at date: Date = Date(), byPush: Bool = false) -> SyncError {
        // Neither a cancelled pass nor one that found another process syncing the store says
        // anything about the store.
        guard failure.kind != .cancelled, failure.kind != .busy else { return failure }
        do {
            try recordFailure(of: store, at: date, message: failure.description, byPush: byPush)
            return failure
        } catch {
            var unrecorded = failure
            unrecorded.unrecordedAt = date
            return unrecorded
        }
    }

    /// The store's live rows: the count stored at the end of the last pass when no transaction
    /// changed it since, else counted (a read of the whole table) and stored.
    public func liveRecordCount(of store: String) throws(StoreError) -> Int {
        do {
            let stored = try connection.prepare("SELECT record_count FROM ferry_sync_state WHERE store = ?1")
            try stored.bind(store, at: 1)
            if try stored.step(), !stored.isNull(at: 0) { return Int(stored.int64(at: 0)) }
        } catch { throw StoreError(error, path: path, store: store) }
        let counted = try recordCount(of: store)
        try updateState(store, "record_count = ?2") { statement throws(SQLiteError) in try statement.bind(counted, at: 2) }
        return counted
    }

    /// Inside the transaction that inserts or deletes live rows: the stored count is stale, and
    /// the last sweep's listing no longer says which rows there are (``recordSweptListing(of:clean:)``).
    func noteLiveRowsChanged(of store: String) throws(SQLiteError) {
        let statement = try connection.prepare("UPDATE ferry_sync_state SET record_count = NULL, swept_listing = NULL WHERE store = ?1")
        try statement.bind(store, at: 1)
        try statement.run()
    }

    /// Forgets the cursor, so the next pass is a full sync.
    public func resetCursor(of store: String) throws(StoreError) {
        try updateState(store, "cursor = NULL") { _ throws(SQLiteError) in }
    }

    /// Stores a cursor a pass held back until its sweep was done.
    public func storeCursor(_ cursor: String, of store: String) throws(StoreError) {
        try updateState(store, "cursor = ?2") { statement throws(SQLiteError) in try statement.bind(cursor, at: 2) }
    }

    private func updateState(_ store: String, _ assignments: String, bind: (Statement) throws(SQLiteError) -> Void) throws(StoreError) {
        requireWritable()
        do {
            let statement = try connection.prepare("UPDATE ferry_sync_state SET \(assignments) WHERE store = ?1")
            try statement.bind(store, at: 1)
            try bind(statement)
            try statement.run()
            guard connection.changes > 0 else {
                throw StoreError(.other, path: path, store: store, message: "no sync state for this store (call prepare first)")
            }
        } catch let error as SQLiteError {
            throw StoreError(error, path: path, store: store)
        } catch {
            throw error as! StoreError
        }
    }
}
