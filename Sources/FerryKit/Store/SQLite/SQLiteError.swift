import CSQLite

/// A failed SQLite call: the extended result code, SQLite's message, the SQL involved and the
/// store/record it was working on. Never carries bound values, so it is safe to log.
///
/// Pattern-match on a result code:
///
///     do { try statement.step() }
///     catch SQLiteError.full { ... }        // any SQLITE_FULL
///     catch SQLiteError.busy { ... }
public struct SQLiteError: Error, Sendable, CustomStringConvertible {
    /// A (primary or extended) SQLite result code, usable as a `catch` pattern.
    public struct ResultCode: Sendable, Hashable {
        public let rawValue: Int32
        public init(_ rawValue: Int32) { self.rawValue = rawValue }

        /// Matches a thrown ``SQLiteError`` whose primary code (or, for an extended pattern,
        /// whose extended code) equals this one.
        public static func ~= (pattern: ResultCode, value: any Error) -> Bool {
            guard let error = value as? SQLiteError else { return false }
            return pattern.rawValue > 0xff ? error.extendedCode == pattern.rawValue : error.primaryCode == pattern.rawValue
        }
    }

    public static let full = ResultCode(SQLITE_FULL)
    public static let busy = ResultCode(SQLITE_BUSY)
    public static let locked = ResultCode(SQLITE_LOCKED)
    public static let readOnly = ResultCode(SQLITE_READONLY)
    public static let corrupt = ResultCode(SQLITE_CORRUPT)
    public static let notADatabase = ResultCode(SQLITE_NOTADB)
    public static let ioError = ResultCode(SQLITE_IOERR)
    public static let constraint = ResultCode(SQLITE_CONSTRAINT)
    public static let cantOpen = ResultCode(SQLITE_CANTOPEN)
    public static let error = ResultCode(SQLITE_ERROR)

    /// The extended result code (`SQLITE_IOERR_WRITE`, `SQLITE_CONSTRAINT_PRIMARYKEY`...).
    public let extendedCode: Int32
    /// The OS error number behind an I/O failure (`ENOSPC`...), 0 when none.
    public let systemErrno: Int32
    /// SQLite's own message (`sqlite3_errmsg`), never containing bound values.
    public let message: String
    /// The statement text (with `?` placeholders), when a statement failed.
    public let sql: String?
    /// What Ferry was doing: "store contacts, record \"abc\"", set by the caller.
    public var context: String?

    public var primaryCode: Int32 { extendedCode & 0xff }

    public init(extendedCode: Int32, systemErrno: Int32 = 0, message: String, sql: String? = nil, context: String? = nil) {
        self.extendedCode = extendedCode
        self.systemErrno = systemErrno
        self.message = message
        self.sql = sql
        self.context = context
    }

    public var description: String {
        var text = "SQLite error \(extendedCode) (\(String(cString: sqlite3_errstr(extendedCode)))): \(message)"
        if systemErrno != 0 { text += ", errno \(systemErrno)" }
        if let context { text += " [\(context)]" }
        if let sql { text += " in `\(sql)`" }
        return text
    }
}
