import CSQLite
import Foundation

/// One SQLite connection. Not thread-safe: it belongs to one thread at a time (SQLite is built
/// serialized here, but Ferry's statements and transactions assume a single user).
///
/// Ferry opens one writer connection per replica file; readers (`ferry status`, other
/// programs) use their own connections and, thanks to WAL, are never blocked by the writer.
final class SQLiteConnection {
    /// How a connection opens its file.
    enum Mode: Sendable, Equatable {
        /// Read-write; the file must exist.
        case readWrite
        /// Read-write, creating the file when missing.
        case readWriteCreate
        case readOnly
    }

    let handle: OpaquePointer
    let path: String
    private var isClosed = false
    /// The hook ``setCommitHook(_:)`` installed, kept alive while SQLite may call it.
    var commitHook: CommitHookBox?

    /// Opens `path`. Extended result codes are enabled so errors can say `SQLITE_IOERR_WRITE`
    /// rather than `SQLITE_IOERR`; the busy timeout makes a locked writer wait instead of
    /// failing at once (another process holding the write lock briefly, e.g. a checkpoint).
    init(path: String, mode: Mode, busyTimeout: Int32 = 5_000) throws(SQLiteError) {
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        switch mode {
        case .readWrite: flags |= SQLITE_OPEN_READWRITE
        case .readWriteCreate: flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
        case .readOnly: flags |= SQLITE_OPEN_READONLY
        }
        var db: OpaquePointer?
        let code = sqlite3_open_v2(path, &db, flags, nil)
        guard let db else { throw SQLiteError(extendedCode: code == SQLITE_OK ? SQLITE_NOMEM : code, message: "cannot open database") }
        do {
            try SQLite.check(code, db)
        } catch {
            sqlite3_close_v2(db)
            throw error
        }
        handle = db
        self.path = path
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, busyTimeout)
    }

    deinit { close() }

    /// Closes the connection; statements still alive are finalized by their own `deinit`
    /// (`sqlite3_close_v2` defers the close until then).
    func close() {
        guard !isClosed else { return }
        isClosed = true
        sqlite3_close_v2(handle)
    }

    /// Runs one or more statements that take no parameters and return no rows worth reading.
    /// Keeps the `-wal` and `-shm` files when the last connection closes. A reader that may
    /// read the replica but not write its directory (an application in the replica's group,
    /// `ferry status` as another user) can then open the WAL-mode file read-only: SQLite needs
    /// both files to exist for that, and would otherwise delete them at ferryd's clean stop.
    func persistWAL() throws(SQLiteError) {
        var on: Int32 = 1
        try SQLite.check(sqlite3_file_control(handle, "main", SQLITE_FCNTL_PERSIST_WAL, &on), handle, sql: "SQLITE_FCNTL_PERSIST_WAL")
    }

    /// Turns this connection's triggers on or off (`SQLITE_DBCONFIG_ENABLE_TRIGGER`); other
    /// connections to the same file keep theirs. Ferry's writer turns them off: the guard
    /// triggers on store tables are for every program but the one applying the remote's
    /// changes.
    func setTriggersEnabled(_ enabled: Bool) throws(SQLiteError) {
        var now: Int32 = -1
        try SQLite.check(ferry_sqlite_db_config_flag(handle, SQLITE_DBCONFIG_ENABLE_TRIGGER, enabled ? 1 : 0, &now), handle,
                         sql: "SQLITE_DBCONFIG_ENABLE_TRIGGER")
        precondition(now == (enabled ? 1 : 0), "SQLite kept triggers \(now == 1 ? "on" : "off")")
    }

    func execute(_ sql: String) throws(SQLiteError) {
        try SQLite.check(sqlite3_exec(handle, sql, nil, nil, nil), handle, sql: sql)
    }

    func prepare(_ sql: String, persistent: Bool = false) throws(SQLiteError) -> Statement {
        try Statement(connection: self, sql: sql, persistent: persistent)
    }

    /// The first column of the first row of `sql` as text, or nil (for PRAGMA reads).
    func scalarText(_ sql: String) throws(SQLiteError) -> String? {
        let statement = try prepare(sql)
        guard try statement.step() else { return nil }
        return statement.string(at: 0)
    }

    func scalarInt(_ sql: String) throws(SQLiteError) -> Int64? {
        let statement = try prepare(sql)
        guard try statement.step(), !statement.isNull(at: 0) else { return nil }
        return statement.int64(at: 0)
    }

    /// All rows' first column as text (integrity_check returns one row per problem).
    func textRows(_ sql: String) throws(SQLiteError) -> [String] {
        let statement = try prepare(sql)
        var rows: [String] = []
        while try statement.step() { rows.append(statement.string(at: 0) ?? "") }
        return rows
    }

    /// Rows changed by the last INSERT/UPDATE/DELETE.
    var changes: Int { Int(sqlite3_changes64(handle)) }

    /// Whether no transaction is open.
    var isAutocommit: Bool { sqlite3_get_autocommit(handle) != 0 }

    // MARK: - Transactions

    /// Runs `body` in a `BEGIN IMMEDIATE` transaction (the write lock is taken up front, so the
    /// busy timeout applies here rather than failing later with an unrecoverable deadlock).
    /// Inside another transaction it is a savepoint of that one: its work commits with the
    /// outer transaction, and its failure undoes its own work and is rethrown (a rebuild's
    /// switch applies many batches and a sweep as one transaction).
    ///
    /// The first error wins: if `body` throws, that error is rethrown even when the rollback
    /// fails too; the rollback always runs. SQLite errors from BEGIN/COMMIT/ROLLBACK go through
    /// `mapError` so callers see one error type.
    func transaction<T, E: Error>(mapError: (SQLiteError) -> E, _ body: () throws(E) -> T) throws(E) -> T {
        let nested = !isAutocommit
        do { try execute(nested ? "SAVEPOINT ferry_nested" : "BEGIN IMMEDIATE") } catch { throw mapError(error) }
        var firstError: E?
        var result: T?
        do {
            result = try body()
            do { try execute(nested ? "RELEASE ferry_nested" : "COMMIT") } catch { firstError = mapError(error) }
        } catch {
            firstError = error
        }
        if let firstError {
            // SQLite may already have rolled back on its own (SQLITE_FULL, SQLITE_IOERR, ...),
            // the outer transaction with it.
            if !isAutocommit {
                do { try execute(nested ? "ROLLBACK TO ferry_nested; RELEASE ferry_nested" : "ROLLBACK") } catch { _ = error /* the first error is what matters */ }
            }
            throw firstError
        }
        return result!
    }

    /// ``transaction(mapError:_:)`` for bodies that only make SQLite calls.
    func transaction<T>(_ body: () throws(SQLiteError) -> T) throws(SQLiteError) -> T {
        try transaction(mapError: { $0 }, body)
    }
}
