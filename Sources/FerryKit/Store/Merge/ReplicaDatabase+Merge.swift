import Foundation

extension ReplicaDatabase {
    /// Applies one batch to a store in ONE transaction: its rows, its cursor (a non-nil
    /// `batch.cursor` replaces the stored one) and the change-log entries. Either all of it is
    /// committed or none of it; the first error wins and the rollback always runs.
    ///
    /// What each change does is ``MergePlan``'s table (a batch is first reduced to the last
    /// change of each id; the superseded ones count as unchanged, so the counts add up to the
    /// batch size). Bad records (``MergePlan/problem(with:maxBytes:)`` and the parser's
    /// `batch.problems`): policy `.skip` counts and reports them; `.fail` throws `.badRecord`
    /// naming the store and record before anything is written.
    ///
    /// Only real changes (insert, update, delete) are logged in `ferry_changes`.
    ///
    /// Most changes take a fast path, one statement deciding in SQL what the table decides
    /// (`INSERT ... ON CONFLICT DO NOTHING` for a new id, `UPDATE ... WHERE` newer for a known
    /// one); when it changes nothing, the stored row is read and ``MergePlan`` decides.
    public func apply(_ batch: ChangeBatch, to store: String) throws(StoreError) -> MergeCounts {
        requireWritable()
        let prepared = try preparedStore(store)
        let definition = prepared.definition
        var counts = MergeCounts()

        // Validate first, so under `.fail` nothing of the batch is written.
        // One pattern match per change here and one when applying it: binding a case's payload
        // copies it (four reference counts for a record), and that showed in bulk profiles.
        let changes = batch.changes
        var problems = batch.problems
        var valid = [Bool](repeating: true, count: changes.count)
        var ids: [String] = []
        ids.reserveCapacity(changes.count)
        for position in changes.indices {
            let id: String
            let reason: String?
            switch changes[position] {
            case .upsert(let record):
                id = record.id
                reason = MergePlan.problem(with: record, maxBytes: definition.maxRecordBytes)
            case .delete(let deleted):
                id = deleted
                reason = deleted.isEmpty ? "empty id" : nil
            }
            ids.append(id)
            if let reason {
                problems.append(RecordProblem(position: position, id: id.isEmpty ? nil : id, reason: reason))
                valid[position] = false
            }
        }
        prepared.deduplicator.scan(ids) { valid[$0] }
        if let first = problems.first {
            guard definition.badRecordPolicy == .skip else {
                throw StoreError(.badRecord, path: path, store: store, recordID: first.id, position: first.position,
                                 message: "bad record (\(first.reason)); policy is fail, nothing of this batch was applied" + (problems.count > 1 ? " (\(problems.count) bad records in the batch)" : ""))
            }
            counts.skipped = problems.count
            counts.problems = problems
        }

        let now = Self.timestamp(Date())
        var current = ""
        let reconciliation = reconciliations[store]
        do {
        prepared.changeLog.begin(at: now)
        try connection.transaction { () throws(SQLiteError) in
            // Records with a queued local change meet the remote's change through ConflictPlan.
            let queued = definition.writeBack.push ? try queuedEntries(of: prepared) : [:]
            // After a group that met a stored id, its records go one by one.
            var oneByOneUntil = changes.startIndex
            var position = changes.startIndex
            while position < changes.endIndex {
                if position >= oneByOneUntil, queued.isEmpty, prepared.probe == .insert,
                   Self.startsGroupOfNewRecords(changes, at: position, valid: valid, superseded: prepared.deduplicator.superseded) {
                    current = ids[position]
                    if try insertGroup(changes, at: position, into: prepared, at: now) {
                        counts.inserted += GroupedInsert.width
                        for row in position ..< position + GroupedInsert.width { try prepared.changeLog.add(.insert, id: ids[row]) }
                        position += GroupedInsert.width
                        continue
                    }
                    oneByOneUntil = position + GroupedInsert.width
                }
                defer { position += 1 }
                guard valid[position] else { continue }
                // Duplicate ids within a batch: only the last one is applied.
                guard !prepared.deduplicator.superseded[position] else {
                    counts.unchanged += 1
                    continue
                }
                current = ids[position]
                if !queued.isEmpty, let entry = queued[current] {
                    try meet(changes[position], entry: entry, in: prepared, at: now, counts: &counts)
                    continue
                }
                switch changes[position] {
                case .upsert(let record):
                    try upsert(record, into: prepared, at: now, rebuilding: batch.rebuilds, counts: &counts)
                case .delete(let id):
                    try delete(id, from: prepared, at: now, counts: &counts)
                }
            }
            current = ""
            if queued.values.contains(where: { $0.operation == .create }) {
                try noteRemovalsOfSentCreates(changes, valid: valid, in: prepared, at: now)
            }
            try updatePending(prepared, applied: changes.indices.lazy.filter { valid[$0] }.map { ids[$0] }, problems: problems, at: now)
            try storePageDigests(of: batch, in: prepared)
            try prepared.changeLog.flush()
            if counts.inserted > 0 || counts.deleted > 0 { try noteLiveRowsChanged(of: store) }
            if let cursor = batch.cursor {
                let statement = try connection.prepare("UPDATE ferry_sync_state SET cursor = ?2 WHERE store = ?1")
                try statement.bind(store, at: 1)
                try statement.bind(cursor, at: 2)
                try statement.run()
            }
        }
        } catch {
            throw StoreError(error, path: path, store: store, recordID: current.isEmpty ? nil : current)
        }
        if reconciliation != nil {
            // Marked once the batch is committed: a batch rolled back marks nothing.
            let superseded = prepared.deduplicator.superseded
            try markMerged(changes.indices.lazy.filter { position in
                guard valid[position], !superseded[position], case .upsert = changes[position] else { return false }
                return true
            }.map { ids[$0] }, in: store)
        }
        prepared.probe = Probe.after(counts)
        counts.unchanged += batch.unchangedRecords
        return counts
    }

    /// Whether the ``GroupedInsert/width`` changes from `position` on are all upserts to apply
    /// (valid, not superseded within the batch): a group ``insertGroup(_:at:into:at:)`` may try.
    static func startsGroupOfNewRecords(_ changes: [RecordChange], at position: Int, valid: [Bool], superseded: [Bool]) -> Bool {
        guard changes.endIndex - position >= GroupedInsert.width else { return false }
        for row in position ..< position + GroupedInsert.width {
            guard valid[row], !superseded[row], case .upsert = changes[row] else { return false }
        }
        return true
    }

    /// Inserts the group of records starting at `position` as new rows; false when one of
    /// them is stored already, and then nothing was written.
    private func insertGroup(_ changes: [RecordChange], at position: Int, into store: PreparedStore, at now: Double) throws(SQLiteError) -> Bool {
        if store.groupedInsert == nil { store.groupedInsert = try GroupedInsert(table: store.definition.name, connection: connection) }
        return try store.groupedInsert!.insert(at: now) { row in
            guard case .upsert(let record) = changes[position + row] else { preconditionFailure("a group of new records holds a delete") }
            return record
        }
    }

    /// `rebuilding`: the batch is a rebuild's, which writes whatever differs from the row, even
    /// a version the store's order calls older (an API restored from a backup).
    private func upsert(_ record: RemoteRecord, into store: PreparedStore, at now: Double, rebuilding: Bool = false,
                        counts: inout MergeCounts) throws(SQLiteError) {
        // Fast paths: one statement, one index descent, as in a raw upsert. When they change
        // nothing (the id exists / is new / is stale / is a tombstone) the full path below decides.
        // A rebuild's updates are decided below: the update probe keeps only newer versions.
        switch rebuilding && store.probe == .update ? .read : store.probe {
        case .insert:
            try run(store.insertIfAbsent, with: record, at: now)
            if connection.changes > 0 {
                counts.inserted += 1
                try store.changeLog.add(.insert, id: record.id)
                return
            }
        case .update:
            try run(store.updateIfNewer, with: record, at: now)
            if connection.changes > 0 {
                counts.updated += 1
                try store.changeLog.add(.update, id: record.id)
                return
            }
        case .read:
            break
        }
        let select = store.select
        try select.bind(record.id, at: 1)
        var stored: MergePlan.Stored?
        var sameBody = true
        // The body is borrowed only while bound: read, then reset, inside the closure.
        let outcome: Result<Void, SQLiteError> = record.body.withUnsafeBytes { body in
            do throws(SQLiteError) {
                try select.bindUnretained(text: body, at: 2)
                if try select.step() {
                    stored = MergePlan.Stored(version: select.string(at: 0) ?? "", deleted: select.int64(at: 1) != 0)
                    sameBody = select.int64(at: 2) != 0
                }
                select.reset()
                return .success(())
            } catch {
                select.reset()
                return .failure(error)
            }
        }
        try outcome.get()
        if !sameBody, let stored, !stored.deleted, stored.version == record.version {
            sameBody = try sameContent(record, store: store)
        }
        let action = MergePlan.upsertAction(incoming: record.version, stored: stored, sameBody: sameBody,
                                            comparison: store.definition.comparison, rebuilding: rebuilding)
        switch action {
        case .insert:
            try run(store.insert, with: record, at: now)
        case .update, .resurrect:
            try run(store.update, with: record, at: now)
        case .unchanged:
            break
        case .delete, .tombstone, .problem:
            preconditionFailure("MergePlan.upsertAction returned \(action) for an upsert")
        }
        counts.add(action)
        if let operation = action.logged { try store.changeLog.add(operation, id: record.id) }
    }

    /// Marks each create that was sent under an id the batch deletes (its answer lost): it
    /// landed and another client deleted it (a DAV sync report lists a member made and deleted
    /// since its token as removed). Committed with the batch's cursor, so the diff that said so
    /// is not read past without it.
    private func noteRemovalsOfSentCreates(_ changes: [RecordChange], valid: [Bool], in prepared: PreparedStore, at now: Double) throws(SQLiteError) {
        let mark = try connection.prepare("""
            UPDATE ferry_outbox SET removed_seen = ?3 WHERE store_id = ?1 AND op = \(LocalOperation.create.sql) AND sent IS NOT NULL AND sent_version = ?2
            """)
        for (position, change) in changes.enumerated() where valid[position] {
            guard case .delete(let id) = change else { continue }
            mark.reset()
            try mark.bind(prepared.storeID, at: 1)
            try mark.bind(id, at: 2)
            try mark.bind(now, at: 3)
            try mark.run()
        }
    }

    /// Whether the row of `record` at its version, whose text differs, holds the same record
    /// (``LocalBodyFormat/sameContent(_:_:)``). Rare: one read of the row.
    private func sameContent(_ record: RemoteRecord, store: PreparedStore) throws(SQLiteError) -> Bool {
        guard store.definition.localBody != .jsonObject else { return false }
        let read = try connection.prepare("SELECT body FROM \(quoted(store.definition.name)) WHERE id = ?1")
        try read.bind(record.id, at: 1)
        guard try read.step(), let stored = read.string(at: 0) else { return false }
        return store.definition.localBody.sameContent(stored, String(decoding: record.body, as: UTF8.self))
    }

    /// Runs a record statement (?1 id, ?2 version, ?3 body, ?4 fields, ?5 time) with the id,
    /// version and body bound where they lie (`SQLITE_STATIC`), borrowed until the run's reset:
    /// copying them into SQLite cost a malloc, a memcpy and a free each, per record.
    private func run(_ statement: Statement, with record: RemoteRecord, at now: Double) throws(SQLiteError) {
        try statement.bind(Self.encodeFields(record.fields), at: 4)
        try statement.bind(now, at: 5)
        var id = record.id
        var version = record.version
        let outcome: Result<Void, SQLiteError> = id.withUTF8 { id in
            version.withUTF8 { version in
                record.body.withUnsafeBytes { body in
                    do throws(SQLiteError) {
                        try statement.bindUnretained(text: UnsafeRawBufferPointer(id), at: 1)
                        try statement.bindUnretained(text: UnsafeRawBufferPointer(version), at: 2)
                        try statement.bindUnretained(text: body, at: 3)
                        try statement.run()
                        return .success(())
                    } catch {
                        statement.reset()
                        return .failure(error)
                    }
                }
            }
        }
        try outcome.get()
    }

    private func delete(_ id: String, from store: PreparedStore, at now: Double, counts: inout MergeCounts) throws(SQLiteError) {
        let statement: Statement
        switch store.definition.deletion {
        case .hard:
            statement = store.delete
            try statement.bind(id, at: 1)
        case .tombstone:
            statement = store.tombstone
            try statement.bind(id, at: 1)
            try statement.bind(now, at: 2)
        }
        try statement.run()
        guard connection.changes > 0 else {
            counts.unchanged += 1
            return
        }
        counts.deleted += 1
        try store.changeLog.add(.delete, id: id)
    }

    /// Extracted vCard/iCalendar fields as a JSON object with sorted keys (stable bytes, so an
    /// unchanged record stores the same text).
    static func encodeFields(_ fields: [String: String]?) -> String? {
        guard let fields else { return nil }
        // What JSONEncoder with sorted keys and unescaped slashes writes, without its cost per
        // record (an encoder, a boxed container, a Data): a tenth of a first CardDAV sync's
        // merge. FieldsEncodingTests compares the two.
        var json: [UInt8] = [UInt8(ascii: "{")]
        for (index, key) in fields.keys.sorted().enumerated() {
            if index > 0 { json.append(UInt8(ascii: ",")) }
            appendJSONString(key, to: &json)
            json.append(UInt8(ascii: ":"))
            appendJSONString(fields[key]!, to: &json)
        }
        json.append(UInt8(ascii: "}"))
        return String(decoding: json, as: UTF8.self)
    }

    private static func appendJSONString(_ text: String, to json: inout [UInt8]) {
        json.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): json += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): json += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0x08: json += [UInt8(ascii: "\\"), UInt8(ascii: "b")]
            case 0x09: json += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0x0A: json += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0C: json += [UInt8(ascii: "\\"), UInt8(ascii: "f")]
            case 0x0D: json += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x00..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                json += Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            default: json.append(byte)
            }
        }
        json.append(UInt8(ascii: "\""))
    }
}
