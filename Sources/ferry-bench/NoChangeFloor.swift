import CSQLite
import FerryKit
import Foundation

/// The floor of a pass that finds nothing changed: for every record the remote lists, look its
/// id up and compare the stored version, one prepared `SELECT` per record over the C API, in
/// one read transaction. Any pass that reads the whole listing (no incremental filter) and
/// writes nothing for unchanged records costs at least this, plus fetching and parsing.
final class NoChangeFloor {
    private let db: OpaquePointer
    private let statement: OpaquePointer

    init(path: String, table: String) throws {
        var handle: OpaquePointer?
        guard sqlite3_open_v2(path, &handle, SQLITE_OPEN_READONLY, nil) == SQLITE_OK, let handle else { throw RawUpsert.RawError.failed("open \(path)") }
        db = handle
        _ = sqlite3_exec(db, "PRAGMA cache_size = -65536", nil, nil, nil)
        var prepared: OpaquePointer?
        guard sqlite3_prepare_v2(db, "SELECT version FROM \"\(table)\" WHERE id = ?1", -1, &prepared, nil) == SQLITE_OK, let prepared else {
            throw RawUpsert.RawError.failed(String(cString: sqlite3_errmsg(db)))
        }
        statement = prepared
    }

    /// Looks every record up; returns how many were stored with the same version.
    func check(_ records: [RemoteRecord]) throws -> Int {
        var same = 0
        guard sqlite3_exec(db, "BEGIN", nil, nil, nil) == SQLITE_OK else { throw RawUpsert.RawError.failed("begin") }
        for record in records {
            sqlite3_bind_text(statement, 1, record.id, -1, ferry_sqlite_transient())
            if sqlite3_step(statement) == SQLITE_ROW, let text = sqlite3_column_text(statement, 0), String(cString: text) == record.version {
                same += 1
            }
            sqlite3_reset(statement)
        }
        guard sqlite3_exec(db, "COMMIT", nil, nil, nil) == SQLITE_OK else { throw RawUpsert.RawError.failed("commit") }
        return same
    }

    func close() {
        sqlite3_finalize(statement)
        sqlite3_close(db)
    }
}
