import Foundation

/// What a rebuild's switch did.
public enum RebuildSwitch: Sendable, Equatable {
    /// The store's rows were replaced by the rebuilt ones: `counts` of the changes applied,
    /// `deleted` rows the remote no longer has swept (also in `counts.deleted`).
    case switched(counts: MergeCounts, deleted: Int)
    /// The sweep would delete more than max-delete-share: nothing was switched, every row is
    /// as it was before the rebuild.
    case refused(wouldDelete: Int, of: Int)
}

extension ReplicaDatabase {
    /// Keeps a rebuild's batch aside (``switchToRebuilt(_:problems:maxDeleteShare:rowsBefore:cursor:)``
    /// applies them all at the end), in one transaction. The last change of an id wins.
    ///
    /// Why aside and not in place: readers must never see a table half old and half new (the
    /// rows of a URL or filter that is no longer configured beside some of the new one's); the
    /// old rows stay exactly as they were until the rebuild has read everything.
    public func stage(_ batch: ChangeBatch, for store: String) throws(StoreError) {
        requireWritable()
        let prepared = try preparedStore(store)
        do {
            try connection.transaction { () throws(SQLiteError) in
                let statement = try connection.prepare("""
                    INSERT INTO ferry_rebuild_staging(store_id, id, version, body, fields, deleted) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                    ON CONFLICT(store_id, id) DO UPDATE SET version = excluded.version, body = excluded.body,
                                                            fields = excluded.fields, deleted = excluded.deleted
                    """, persistent: true)
                for change in batch.changes {
                    try statement.bind(prepared.storeID, at: 1)
                    switch change {
                    case .upsert(let record):
                        try statement.bind(record.id, at: 2)
                        try statement.bind(record.version, at: 3)
                        try statement.bind(record.body, at: 4)
                        try statement.bind(Self.encodeFields(record.fields), at: 5)
                        try statement.bind(0, at: 6)
                    case .delete(let id):
                        try statement.bind(id, at: 2)
                        try statement.bind("", at: 3)
                        try statement.bindNull(at: 4)
                        try statement.bindNull(at: 5)
                        try statement.bind(1, at: 6)
                    }
                    try statement.run()
                }
            }
        } catch { throw StoreError(error, path: path, store: store) }
    }

    /// Forgets what a rebuild cut short (a crash, a failed pass) kept aside; nothing when none.
    public func discardStaged(of store: String) throws(StoreError) {
        requireWritable()
        let prepared = try preparedStore(store)
        do {
            let statement = try connection.prepare("DELETE FROM ferry_rebuild_staging WHERE store_id = ?1", persistent: true)
            try statement.bind(prepared.storeID, at: 1)
            try statement.run()
        } catch { throw StoreError(error, path: path, store: store) }
    }

    /// The switch of a rebuild whose listing completed (the reconciliation begun by
    /// ``beginReconciliation(of:)`` holds its ids): in ONE transaction, the records kept aside
    /// are merged into the store as any pass's changes are (only what differs is written and
    /// logged; queued local writes meet them as conflicts do), the rows the remote no longer
    /// has are swept, and `cursor` is stored. Readers see the old rows until the commit and the
    /// new ones after it; the change log records the difference.
    ///
    /// When the sweep would delete more than `maxDeleteShare` of `rowsBefore`, nothing is
    /// switched: the transaction is rolled back, the rows stay as they were, and the kept
    /// records are discarded (the next rebuild reads them again).
    public func switchToRebuilt(_ store: String, problems: [RecordProblem], maxDeleteShare: Double, rowsBefore: Int?,
                                cursor: String?) throws(StoreError) -> RebuildSwitch {
        requireWritable()
        let prepared = try preparedStore(store)
        /// Why the transaction ended early: a refusal rolls back like a failure.
        enum Abort: Error {
            case refused(wouldDelete: Int, of: Int)
            case failed(StoreError)
        }
        let mapSQLite = { (error: SQLiteError) -> Abort in .failed(StoreError(error, path: self.path, store: store)) }
        do throws(Abort) {
            return try connection.transaction(mapError: mapSQLite) { () throws(Abort) -> RebuildSwitch in
                var counts: MergeCounts
                let outcome: ReconcileOutcome
                do throws(StoreError) {
                    counts = try applyStaged(prepared, problems: problems)
                    outcome = try finishReconciliation(of: store, maxDeleteShare: maxDeleteShare, rowsBefore: rowsBefore)
                } catch {
                    throw .failed(error)
                }
                switch outcome {
                case .refused(let wouldDelete, let total):
                    throw .refused(wouldDelete: wouldDelete, of: total)
                case .swept(let deleted):
                    do throws(StoreError) {
                        if let cursor { try storeCursor(cursor, of: store) }
                        try discardStaged(of: store)
                    } catch {
                        throw .failed(error)
                    }
                    counts.deleted += deleted
                    return .switched(counts: counts, deleted: deleted)
                }
            }
        } catch {
            cancelReconciliation(of: store)
            switch error {
            case .refused(let wouldDelete, let total):
                try discardStaged(of: store)
                return .refused(wouldDelete: wouldDelete, of: total)
            case .failed(let failure):
                throw failure
            }
        }
    }

    /// Merges everything kept aside for the store, 10,000 records at a time (each merge a
    /// savepoint of the caller's transaction); `problems` go with the first.
    private func applyStaged(_ store: PreparedStore, problems: [RecordProblem]) throws(StoreError) -> MergeCounts {
        var counts = MergeCounts()
        var after = ""
        var problems = problems
        while true {
            let chunk = try stagedChunk(of: store, after: after)
            if chunk.isEmpty, problems.isEmpty { return counts }
            var batch = ChangeBatch(changes: chunk, cursor: nil, problems: problems)
            batch.rebuilds = true
            counts += try apply(batch, to: store.definition.name)
            problems = []
            guard let last = chunk.last else { return counts }
            after = last.id
        }
    }

    /// Up to 10,000 records kept aside for the store, in id order after `after`.
    private func stagedChunk(of store: PreparedStore, after: String) throws(StoreError) -> [RecordChange] {
        do {
            let statement = try connection.prepare("""
                SELECT id, version, body, fields, deleted FROM ferry_rebuild_staging
                WHERE store_id = ?1 AND id > ?2 ORDER BY id LIMIT 10000
                """, persistent: true)
            defer { statement.reset() }
            try statement.bind(store.storeID, at: 1)
            try statement.bind(after, at: 2)
            var changes: [RecordChange] = []
            while try statement.step() {
                let id = statement.string(at: 0) ?? ""
                if statement.int64(at: 4) != 0 {
                    changes.append(.delete(id: id))
                    continue
                }
                let fields = statement.string(at: 3).flatMap { text in
                    (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: String]
                }
                changes.append(.upsert(RemoteRecord(id: id, version: statement.string(at: 1) ?? "", body: statement.data(at: 2) ?? Data(),
                                                    fields: fields)))
            }
            return changes
        } catch { throw StoreError(error, path: path, store: store.definition.name) }
    }
}
