import CSQLite
import FerryKit
import Foundation

/// The benchmark's baseline: the plainest fast way to load rows, a single prepared
/// `INSERT ... ON CONFLICT DO UPDATE` per row over the C API, one transaction per batch, the
/// same table shape and pragmas as the replica in bulk mode. No change log, no validation.
final class RawUpsert {
    private let db: OpaquePointer
    private let statement: OpaquePointer

    init(path: String) throws {
        var handle: OpaquePointer?
        guard sqlite3_open(path, &handle) == SQLITE_OK, let handle else { throw RawError.failed("open \(path)") }
        db = handle
        let setup = """
            PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;
            PRAGMA cache_size = -65536; PRAGMA wal_autocheckpoint = 20000;
            CREATE TABLE bench(id TEXT PRIMARY KEY NOT NULL, version TEXT NOT NULL, body TEXT NOT NULL, fields TEXT,
                               first_seen REAL NOT NULL, last_synced REAL NOT NULL, deleted INTEGER NOT NULL DEFAULT 0);
            """
        guard sqlite3_exec(db, setup, nil, nil, nil) == SQLITE_OK else { throw RawError.failed(String(cString: sqlite3_errmsg(db))) }
        var prepared: OpaquePointer?
        let sql = """
            INSERT INTO bench(id, version, body, fields, first_seen, last_synced, deleted) VALUES (?1, ?2, ?3, NULL, ?4, ?4, 0)
            ON CONFLICT(id) DO UPDATE SET version = excluded.version, body = excluded.body, last_synced = excluded.last_synced
            WHERE excluded.version > bench.version
            """
        guard sqlite3_prepare_v2(db, sql, -1, &prepared, nil) == SQLITE_OK, let prepared else { throw RawError.failed(String(cString: sqlite3_errmsg(db))) }
        statement = prepared
    }

    func upsert(_ records: [RemoteRecord]) throws {
        let now = Date().timeIntervalSince1970
        guard sqlite3_exec(db, "BEGIN", nil, nil, nil) == SQLITE_OK else { throw RawError.failed("begin") }
        for record in records {
            sqlite3_bind_text(statement, 1, record.id, -1, ferry_sqlite_transient())
            sqlite3_bind_text(statement, 2, record.version, -1, ferry_sqlite_transient())
            record.body.withUnsafeBytes { raw in
                _ = sqlite3_bind_text(statement, 3, raw.baseAddress!.assumingMemoryBound(to: CChar.self), Int32(raw.count), ferry_sqlite_transient())
            }
            sqlite3_bind_double(statement, 4, now)
            guard sqlite3_step(statement) == SQLITE_DONE else { throw RawError.failed(String(cString: sqlite3_errmsg(db))) }
            sqlite3_reset(statement)
        }
        guard sqlite3_exec(db, "COMMIT", nil, nil, nil) == SQLITE_OK else { throw RawError.failed("commit") }
    }

    func close() {
        sqlite3_finalize(statement)
        sqlite3_close(db)
    }

    enum RawError: Error { case failed(String) }
}
