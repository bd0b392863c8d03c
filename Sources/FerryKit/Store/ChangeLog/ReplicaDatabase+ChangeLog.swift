import Foundation

extension ReplicaDatabase {
    /// Change-log entries with a sequence greater than `sequence`, oldest first, at most `limit`.
    /// A follower stores the last sequence it processed and asks again from there.
    public func changes(after sequence: Int64, limit: Int) throws(StoreError) -> [ChangeLogEntry] {
        do {
            let statement = try connection.prepare("SELECT seq, store, id, op, time, origin FROM ferry_changes WHERE seq > ?1 ORDER BY seq LIMIT ?2")
            try statement.bind(sequence, at: 1)
            try statement.bind(limit, at: 2)
            var entries: [ChangeLogEntry] = []
            while try statement.step() {
                entries.append(ChangeLogEntry(
                    sequence: statement.int64(at: 0), store: statement.string(at: 1) ?? "", id: statement.string(at: 2) ?? "",
                    operation: statement.string(at: 3) ?? "", time: Date(timeIntervalSince1970: statement.double(at: 4)),
                    origin: statement.string(at: 5) ?? "remote"))
            }
            return entries
        } catch { throw StoreError(error, path: path) }
    }

    /// Retention: deletes entries older than `keepingNewerThan` (all entries but the newest when
    /// nil), but always keeps the newest `keepingAtLeast`, and deletes at most `limit` (the
    /// oldest) in one transaction, so a long backlog is pruned in steps that never hold the
    /// write lock long. Returns how many were deleted. Sequences are never reused, so followers
    /// can tell a pruned gap from a quiet period.
    public func pruneChangeLog(keepingNewerThan date: Date?, keepingAtLeast: Int, limit: Int = .max) throws(StoreError) -> Int {
        requireWritable()
        do {
            return try connection.transaction { () throws(SQLiteError) -> Int in
                // The newest `keepingAtLeast` entries have seq >= this bound.
                let boundary = try connection.prepare("SELECT seq FROM ferry_change_log ORDER BY seq DESC LIMIT 1 OFFSET ?1")
                try boundary.bind(max(keepingAtLeast - 1, 0), at: 1)
                guard try boundary.step() else { return 0 }
                let keepFrom = keepingAtLeast > 0 ? boundary.int64(at: 0) : Int64.max
                boundary.reset()
                // Times grow with seq, so the old entries are a prefix: find where it ends by
                // walking from the oldest row (cost proportional to what is pruned, no index).
                var end = keepFrom
                if let date {
                    let firstKept = try connection.prepare("SELECT seq FROM ferry_change_log WHERE time >= ?1 ORDER BY seq LIMIT 1")
                    try firstKept.bind(Self.timestamp(date), at: 1)
                    if try firstKept.step() { end = min(end, firstKept.int64(at: 0)) }
                    firstKept.reset()
                }
                if limit < Int.max {
                    // Sequences are dense but for pruned gaps: the oldest plus `limit` bounds a step.
                    let oldest = try connection.scalarInt("SELECT min(seq) FROM ferry_change_log") ?? end
                    end = min(end, oldest + Int64(limit))
                }
                // The log has no AUTOINCREMENT (migration v3): remember the highest sequence
                // deleted, so the writer never hands it out again even if the log is now empty.
                let floor = try connection.prepare("""
                    INSERT INTO ferry_meta(key, value)
                    SELECT 'change_seq_floor', max(seq) FROM ferry_change_log WHERE seq < ?1 HAVING max(seq) IS NOT NULL
                    ON CONFLICT(key) DO UPDATE SET value = max(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))
                    """)
                try floor.bind(end, at: 1)
                try floor.run()
                let statement = try connection.prepare("DELETE FROM ferry_change_log WHERE seq < ?1")
                try statement.bind(end, at: 1)
                try statement.run()
                return connection.changes
            }
        } catch { throw StoreError(error, path: path) }
    }
}
