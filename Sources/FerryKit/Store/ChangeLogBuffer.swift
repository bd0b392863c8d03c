/// Collects one batch's change-log entries and writes them `width` rows per INSERT into
/// `ferry_change_log`, assigning their sequence numbers itself.
///
/// A single-row insert per merged record cost as much as the record's own upsert (statement
/// overhead per row): the merge ran at 0.45× the raw upsert rate. Multi-row statements amortise
/// it. Rows are compact (integer store and operation, see migration v3) and the sequence of row
/// `k` of a statement is `?3 + k`, so a row costs one bound id and one bound operation.
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
    private let nextSequence: Statement
    private var pending: [(id: String, operation: Operation)] = []
    private var time = 0.0
    /// The sequence the next written row gets; read once per transaction (nil until then).
    private var next: Int64?

    /// The next free sequence: above every row and above everything ever pruned.
    static let nextSequenceSQL = """
        SELECT max(coalesce((SELECT max(seq) FROM ferry_change_log), 0),
                   coalesce((SELECT CAST(value AS INTEGER) FROM ferry_meta WHERE key = 'change_seq_floor'), 0)) + 1
        """

    init(storeID: Int64, connection: SQLiteConnection) throws(SQLiteError) {
        self.storeID = storeID
        self.connection = connection
        let rows = (0..<Self.width).map { "(?3 + \($0), ?1, ?\($0 * 2 + 4), ?\($0 * 2 + 5), ?2)" }.joined(separator: ", ")
        wide = try connection.prepare("INSERT INTO ferry_change_log(seq, store_id, id, op, time) VALUES \(rows)", persistent: true)
        single = try connection.prepare("INSERT INTO ferry_change_log(seq, store_id, id, op, time) VALUES (?3, ?1, ?4, ?5, ?2)", persistent: true)
        nextSequence = try connection.prepare(Self.nextSequenceSQL, persistent: true)
        pending.reserveCapacity(Self.width)
    }

    /// Starts a batch: entries get this time. Drops anything left from a failed batch.
    func begin(at time: Double) {
        self.time = time
        next = nil
        pending.removeAll(keepingCapacity: true)
    }

    func add(_ operation: Operation, id: String) throws(SQLiteError) {
        pending.append((id, operation))
        if pending.count == Self.width { try flush() }
    }

    /// Writes what is pending; call before the batch's transaction commits.
    func flush() throws(SQLiteError) {
        defer { pending.removeAll(keepingCapacity: true) }
        guard !pending.isEmpty else { return }
        if pending.count == Self.width {
            try write(pending, with: wide)
        } else {
            for entry in pending { try write([entry], with: single) }
        }
    }

    private func write(_ entries: [(id: String, operation: Operation)], with statement: Statement) throws(SQLiteError) {
        let first: Int64
        if let next {
            first = next
        } else {
            // Inside the transaction (this connection is the only writer), so nobody else can
            // take these numbers before the commit.
            defer { nextSequence.reset() }
            guard try nextSequence.step() else { preconditionFailure("\(Self.nextSequenceSQL) returned no row") }
            first = nextSequence.int64(at: 0)
        }
        try statement.bind(storeID, at: 1)
        try statement.bind(time, at: 2)
        try statement.bind(first, at: 3)
        for (index, entry) in entries.enumerated() {
            try statement.bind(entry.id, at: Int32(index * 2 + 4))
            try statement.bind(entry.operation.rawValue, at: Int32(index * 2 + 5))
        }
        try statement.run()
        next = first + Int64(entries.count)
    }
}
