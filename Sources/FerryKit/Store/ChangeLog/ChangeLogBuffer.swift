/// Collects one batch's change-log entries and writes them `width` rows per INSERT into
/// `ferry_change_log`, assigning their sequence numbers itself.
///
/// A single-row insert per merged record cost as much as the record's own upsert (statement
/// overhead per row): the merge ran at 0.45× the raw upsert rate. Multi-row statements amortise
/// it. Rows are compact (integer store and operation, see migration v3), a row costs one bound
/// id and one bound operation, and `seq` is left to SQLite: a NULL integer primary key becomes
/// max(seq) + 1 and is appended without a B-tree search (an explicit `seq` costs a search per
/// row, about 2% of a bulk merge). That is exactly the next sequence, except after pruning
/// removed the newest entries: then `ferry_meta.change_seq_floor` is above max(seq), and the
/// transaction's first entry is written with its sequence explicitly, which moves max(seq) up.
/// Entries are written in the order they were added, inside the batch's transaction, so
/// sequences follow the batch.
final class ChangeLogBuffer {
    static let width = 64

    /// The operation codes stored in `ferry_change_log.op` (the `ferry_changes` view maps them
    /// back to text).
    enum Operation: Int64 {
        case insert = 1
        case update = 2
        case delete = 3
    }

    private let storeID: Int64
    private let connection: SQLiteConnection
    private let wide: Statement
    private let single: Statement
    private let explicitSingle: Statement
    private let nextSequence: Statement
    /// The pending entries' ids, back to back, bound straight from here (`SQLITE_STATIC`): a
    /// String per entry cost a retain, a release and SQLite's copy of the text, about a third of
    /// what logging a change cost the bulk merge.
    private var idBytes: [UInt8] = []
    /// Where each pending entry's id ends in `idBytes`, and its operation.
    private var pending: [(end: Int, operation: Operation)] = []
    private var time = 0.0
    /// Whether this transaction's first entry has been written (with the floor checked).
    private var started = false

    /// The next free sequence: above every row and above everything ever pruned.
    static let nextSequenceSQL = """
        SELECT max(coalesce((SELECT max(seq) FROM ferry_change_log), 0),
                   coalesce((SELECT CAST(value AS INTEGER) FROM ferry_meta WHERE key = 'change_seq_floor'), 0)) + 1
        """
    /// The next free sequence, and whether SQLite's own choice for a NULL `seq` (max + 1) is it.
    private static let nextSequenceCheckSQL = """
        SELECT (\(nextSequenceSQL)), coalesce((SELECT max(seq) FROM ferry_change_log), 0) + 1
        """

    init(storeID: Int64, connection: SQLiteConnection) throws(SQLiteError) {
        self.storeID = storeID
        self.connection = connection
        let rows = (0..<Self.width).map { "(NULL, ?1, ?\($0 * 2 + 3), ?\($0 * 2 + 4), ?2)" }.joined(separator: ", ")
        wide = try connection.prepare("INSERT INTO ferry_change_log(seq, store_id, id, op, time) VALUES \(rows)", persistent: true)
        single = try connection.prepare("INSERT INTO ferry_change_log(seq, store_id, id, op, time) VALUES (NULL, ?1, ?3, ?4, ?2)", persistent: true)
        explicitSingle = try connection.prepare("INSERT INTO ferry_change_log(seq, store_id, id, op, time) VALUES (?5, ?1, ?3, ?4, ?2)", persistent: true)
        nextSequence = try connection.prepare(Self.nextSequenceCheckSQL, persistent: true)
        pending.reserveCapacity(Self.width)
        idBytes.reserveCapacity(Self.width * 32)
    }

    /// Starts a batch: entries get this time. Drops anything left from a failed batch.
    func begin(at time: Double) {
        self.time = time
        started = false
        clear()
    }

    func add(_ operation: Operation, id: String) throws(SQLiteError) {
        idBytes.append(contentsOf: id.utf8)
        pending.append((idBytes.count, operation))
        if pending.count == Self.width { try flush() }
    }

    /// Writes what is pending; call before the batch's transaction commits.
    func flush() throws(SQLiteError) {
        defer { clear() }
        guard !pending.isEmpty else { return }
        let outcome: Result<Void, SQLiteError> = idBytes.withUnsafeBytes { ids in
            do throws(SQLiteError) {
                try write(ids)
                return .success(())
            } catch {
                // A bind that failed before its run leaves pointers into `idBytes` bound.
                for statement in [wide, single, explicitSingle] { statement.reset() }
                return .failure(error)
            }
        }
        try outcome.get()
    }

    private func clear() {
        pending.removeAll(keepingCapacity: true)
        idBytes.removeAll(keepingCapacity: true)
    }

    /// Runs the statements for every pending entry while `ids` (the bytes of `idBytes`) is
    /// borrowed; each statement's run ends with a reset, so no binding outlives the borrow.
    private func write(_ ids: UnsafeRawBufferPointer) throws(SQLiteError) {
        var entries = pending.indices
        if !started {
            let (first, automatic) = try sequences()
            if first != automatic, let position = entries.popFirst() {
                try explicitSingle.bind(first, at: 5)
                try bind(position..<position + 1, of: ids, to: explicitSingle)
                try explicitSingle.run()
            }
            started = true
        }
        if entries.count == Self.width {
            try bind(entries, of: ids, to: wide)
            try wide.run()
        } else {
            for position in entries {
                try bind(position..<position + 1, of: ids, to: single)
                try single.run()
            }
        }
    }

    /// The next free sequence and SQLite's choice for a NULL `seq`. Read inside the transaction
    /// (this connection is the only writer), so nobody else can take them before the commit.
    private func sequences() throws(SQLiteError) -> (next: Int64, automatic: Int64) {
        defer { nextSequence.reset() }
        guard try nextSequence.step() else { preconditionFailure("\(Self.nextSequenceCheckSQL) returned no row") }
        return (nextSequence.int64(at: 0), nextSequence.int64(at: 1))
    }

    private func bind(_ entries: Range<Int>, of ids: UnsafeRawBufferPointer, to statement: Statement) throws(SQLiteError) {
        try statement.bind(storeID, at: 1)
        try statement.bind(time, at: 2)
        for (index, position) in entries.enumerated() {
            let start = position == 0 ? 0 : pending[position - 1].end
            try statement.bindUnretained(text: UnsafeRawBufferPointer(rebasing: ids[start..<pending[position].end]), at: Int32(index * 2 + 3))
            try statement.bind(pending[position].operation.rawValue, at: Int32(index * 2 + 4))
        }
    }
}
