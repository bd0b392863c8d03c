import CSQLite

/// The one place where SQLite result codes become Swift errors or traps.
enum SQLite {
    /// Checks a result code. `SQLITE_OK`, `SQLITE_ROW` and `SQLITE_DONE` pass; `SQLITE_MISUSE`
    /// and `SQLITE_RANGE` mean Ferry called SQLite wrongly and trap; anything else throws,
    /// with the connection's message (read now, before another call overwrites it).
    @discardableResult
    static func check(_ code: Int32, _ db: OpaquePointer?, sql: String? = nil) throws(SQLiteError) -> Int32 {
        switch code & 0xff {
        case SQLITE_OK, SQLITE_ROW, SQLITE_DONE:
            return code
        case SQLITE_MISUSE, SQLITE_RANGE:
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "no connection"
            preconditionFailure("SQLite misuse (\(code)): \(message) in \(sql ?? "-")")
        default:
            // With extended codes on, the code we got is already extended; errmsg may describe
            // a later call if none was made in between, so it is read here, immediately.
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(code))
            let errno = db.map { sqlite3_system_errno($0) } ?? 0
            throw SQLiteError(extendedCode: code, systemErrno: errno, message: message, sql: sql)
        }
    }
}
