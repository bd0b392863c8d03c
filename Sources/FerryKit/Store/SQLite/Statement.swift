import CSQLite
import Foundation

/// A prepared statement: typed binding, stepping, column reads and reset.
///
/// Bound values are never kept or reported; only the SQL text appears in errors.
/// One static zero byte: the non-null pointer bound for empty text.
private nonisolated(unsafe) let emptyText: UnsafeMutablePointer<UInt8> = {
    let pointer = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)
    pointer.initialize(to: 0)
    return pointer
}()

final class Statement {
    let handle: OpaquePointer
    let sql: String
    /// Kept so the connection outlives its statements.
    private let connection: SQLiteConnection

    init(connection: SQLiteConnection, sql: String, persistent: Bool) throws(SQLiteError) {
        var statement: OpaquePointer?
        let flags = persistent ? UInt32(SQLITE_PREPARE_PERSISTENT) : 0
        try SQLite.check(sqlite3_prepare_v3(connection.handle, sql, -1, flags, &statement, nil), connection.handle, sql: sql)
        guard let statement else {
            // Only whitespace or a comment: our own bug.
            preconditionFailure("empty SQL statement: \(sql)")
        }
        handle = statement
        self.sql = sql
        self.connection = connection
    }

    deinit { sqlite3_finalize(handle) }

    // MARK: - Binding (1-based indexes, as in SQLite)

    func bind(_ value: Int64, at index: Int32) throws(SQLiteError) {
        try SQLite.check(sqlite3_bind_int64(handle, index, value), connection.handle, sql: sql)
    }

    func bind(_ value: Int, at index: Int32) throws(SQLiteError) {
        try bind(Int64(value), at: index)
    }

    func bind(_ value: Double, at index: Int32) throws(SQLiteError) {
        try SQLite.check(sqlite3_bind_double(handle, index, value), connection.handle, sql: sql)
    }

    func bind(_ value: String, at index: Int32) throws(SQLiteError) {
        var value = value
        let code = value.withUTF8 { bytes in
            // A zero-length buffer may have no base address; SQLite needs a non-null pointer for
            // an empty string (null would bind NULL).
            UnsafeRawPointer(bytes.baseAddress ?? UnsafePointer(emptyText)).withMemoryRebound(to: CChar.self, capacity: max(bytes.count, 1)) { text in
                sqlite3_bind_text(handle, index, text, Int32(bytes.count), ferry_sqlite_transient())
            }
        }
        try SQLite.check(code, connection.handle, sql: sql)
    }

    /// Binds bytes already checked to be UTF-8 as TEXT (record bodies), without a String copy.
    func bindText(utf8 data: Data, at index: Int32) throws(SQLiteError) {
        let code = data.withUnsafeBytes { raw in
            (raw.baseAddress ?? UnsafeRawPointer(emptyText)).withMemoryRebound(to: CChar.self, capacity: max(raw.count, 1)) { text in
                sqlite3_bind_text(handle, index, text, Int32(raw.count), ferry_sqlite_transient())
            }
        }
        try SQLite.check(code, connection.handle, sql: sql)
    }

    /// Binds UTF-8 bytes as TEXT without copying them (`SQLITE_STATIC`): the caller keeps them
    /// alive and unchanged until this statement is reset (``run()`` ends with one).
    func bindUnretained(text bytes: UnsafeRawBufferPointer, at index: Int32) throws(SQLiteError) {
        let text = (bytes.baseAddress ?? UnsafeRawPointer(emptyText)).assumingMemoryBound(to: CChar.self)
        try SQLite.check(sqlite3_bind_text(handle, index, text, Int32(bytes.count), nil), connection.handle, sql: sql)
    }

    func bind(_ value: Data, at index: Int32) throws(SQLiteError) {
        let code = value.withUnsafeBytes { raw in
            sqlite3_bind_blob(handle, index, raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(raw.count), ferry_sqlite_transient())
        }
        try SQLite.check(code, connection.handle, sql: sql)
    }

    func bindNull(at index: Int32) throws(SQLiteError) {
        try SQLite.check(sqlite3_bind_null(handle, index), connection.handle, sql: sql)
    }

    func bind(_ value: String?, at index: Int32) throws(SQLiteError) {
        if let value { try bind(value, at: index) } else { try bindNull(at: index) }
    }

    // MARK: - Stepping

    /// Steps once: true when a row is available, false when done.
    @discardableResult
    func step() throws(SQLiteError) -> Bool {
        let code = sqlite3_step(handle)
        if code == SQLITE_ROW { return true }
        if code == SQLITE_DONE { return false }
        // Reset so the statement does not keep a read transaction open after the failure.
        sqlite3_reset(handle)
        try SQLite.check(code, connection.handle, sql: sql)
        return false
    }

    /// Resets for another execution and clears the bindings (no stale value leaks into the next use).
    func reset() {
        // sqlite3_reset repeats the last step's error, which was already reported.
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    /// Steps to completion, then resets.
    func run() throws(SQLiteError) {
        defer { reset() }
        while try step() {}
    }

    // MARK: - Columns (0-based indexes, as in SQLite)

    func isNull(at index: Int32) -> Bool { sqlite3_column_type(handle, index) == SQLITE_NULL }
    func int64(at index: Int32) -> Int64 { sqlite3_column_int64(handle, index) }
    func double(at index: Int32) -> Double { sqlite3_column_double(handle, index) }

    func string(at index: Int32) -> String? {
        guard let text = sqlite3_column_text(handle, index) else { return nil }
        let count = Int(sqlite3_column_bytes(handle, index))
        return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
    }

    /// Copies a TEXT column's UTF-8 bytes into `bytes` (emptied first), without a String.
    func copyText(at index: Int32, into bytes: inout [UInt8]) {
        bytes.removeAll(keepingCapacity: true)
        guard let text = sqlite3_column_text(handle, index) else { return }
        bytes.append(contentsOf: UnsafeBufferPointer(start: text, count: Int(sqlite3_column_bytes(handle, index))))
    }

    func data(at index: Int32) -> Data? {
        if isNull(at: index) { return nil }
        let count = Int(sqlite3_column_bytes(handle, index))
        guard let bytes = sqlite3_column_blob(handle, index) else { return Data() }
        return Data(bytes: bytes, count: count)
    }
}
