import CSQLite
import Foundation

/// A local replica file: one SQLite database holding a table per store, the sync state, and
/// the change log local programs follow.
///
/// **Threading:** not thread-safe. One owner at a time (the pass operation's thread) calls its
/// methods; hand it to another thread only after the previous owner is done with it. It holds
/// the file's one writer connection; other processes read concurrently (WAL: readers never wait
/// for the writer and never see a half-applied batch).
///
///     let replica = try ReplicaDatabase(path: "/var/lib/ferry/replica.db")
///     try replica.prepare(StoreDefinition(configuration))
///     let counts = try replica.apply(batch, to: "contacts")   // rows + cursor + change log, atomically
public final class ReplicaDatabase {
    /// The replica file.
    public let path: String
    let connection: SQLiteConnection
    let isReadOnly: Bool
    /// The file was opened without `quick_check` (``init(path:deferIntegrityCheckAbove:)``):
    /// the owner runs ``checkIntegrity(path:)``.
    public let integrityCheckDeferred: Bool

    /// Per-store prepared statements and definitions, filled by ``prepare(_:)``.
    var stores: [String: PreparedStore] = [:]
    /// Stores between ``beginReconciliation(of:)`` and its finish or cancel.
    var reconciliations: [String: ReconciliationState] = [:]
    /// The arena of each reconciliation's marks (tests make it small to put runs on disk).
    var marksArenaBytes = ReconciliationState.marksArenaBytes
    /// `PRAGMA data_version` when ``storesWithLocalWrites(among:)`` last looked: it changes
    /// only when another connection commits, which is what a local write is.
    var lastDataVersion: Int64 = -1
    /// The pragmas ``setBulkMode(_:)`` replaced, to restore them.
    var savedPragmas: (cacheSize: Int64, autocheckpoint: Int64)?
    /// The passes this connection claimed, by store id (``claimPass(of:token:at:)``).
    var heldClaims: [Int64: HeldClaim] = [:]
    /// The file whose locks are the claims, opened at the first claim.
    var passLock: PassLockFile?
    /// Checkpoints the WAL beside the writer while bulk mode is on.
    var checkpointer: WALCheckpointer?
    /// When bulk mode's checkpointer copies and when the writer waits for it (tests make
    /// them small).
    var bulkCheckpointLimits = WALCheckpointer.Limits()

    /// Opens (creating if missing) the replica read-write, switches it to WAL and migrates it.
    ///
    /// An existing file is checked first and refused, never overwritten, when it is not Ferry's
    /// (`.notFerryDatabase`), comes from a newer Ferry (`.newerSchema`) or fails `quick_check`
    /// (`.corrupt`).
    ///
    /// `deferIntegrityCheckAbove`: for an existing file larger than this many bytes, skip
    /// `quick_check` (it reads every page: about 13 s per 800 MB from a cold cache). Unless such
    /// a check passed within ``integrityCheckEvery`` (``recordIntegrityCheck(at:)``),
    /// ``integrityCheckDeferred`` is then set and the caller runs ``checkIntegrity(path:)``
    /// itself, off its start-up path. In between, SQLite reports a damaged page it reads
    /// (SQLITE_CORRUPT), which fails the pass that read it.
    public convenience init(path: String, deferIntegrityCheckAbove: Int64? = nil) throws(StoreError) {
        try self.init(path: path, busyTimeoutMilliseconds: 5_000, deferIntegrityCheckAbove: deferIntegrityCheckAbove)
    }

    /// `busyTimeoutMilliseconds`: how long a write waits for another process's write lock
    /// before failing with `.busy` (tests shorten it).
    init(path: String, busyTimeoutMilliseconds: Int32, deferIntegrityCheckAbove: Int64? = nil) throws(StoreError) {
        self.path = path
        isReadOnly = false
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int).map(Int64.init) ?? 0
        let existing = size > 0
        let large = existing && deferIntegrityCheckAbove.map { size > $0 } ?? false
        let opened: SQLiteConnection
        do {
            opened = try SQLiteConnection(path: path, mode: existing ? .readWrite : .readWriteCreate, busyTimeout: busyTimeoutMilliseconds)
        } catch {
            throw Self.diagnosed(StoreError(error, path: path), readOnly: false)
        }
        do {
            try Self.setUp(opened, path: path, existing: existing, checkIntegrity: !large)
        } catch {
            opened.close()
            throw Self.diagnosed(error, readOnly: false)
        }
        connection = opened
        integrityCheckDeferred = large && Self.integrityCheckDue(opened, now: Date())
        // A file this process just made holds only what SQLite will write into it, and a small
        // one was just checked: either way the next day's opens need not read it whole again.
        // Without this, the first `ferry sync` after a first sync of a large store read every
        // page of the replica it had just written (0.8x the first sync from a cold cache).
        if !existing || !large { try? recordIntegrityCheck(at: Date()) }
    }

    /// Checks, switches to WAL and migrates a connection just opened read-write.
    private static func setUp(_ connection: SQLiteConnection, path: String, existing: Bool, checkIntegrity: Bool) throws(StoreError) {
        if existing { try Self.verify(connection, path: path, readOnly: false, checkIntegrity: checkIntegrity) }
        do {
            // WAL: readers never block the writer nor each other. synchronous=NORMAL is durable
            // against process crashes (kill -9); only a power loss may lose the last commits,
            // never consistency.
            let mode = try connection.scalarText("PRAGMA journal_mode = WAL")
            guard mode?.lowercased() == "wal" else {
                throw StoreError(.other, path: path, message: "cannot switch to WAL journal mode (got \(mode ?? "nothing"))")
            }
            try connection.execute("PRAGMA synchronous = NORMAL")
            try connection.persistWAL()
            // What this connection writes is the remote's state, never a local edit: the
            // triggers that refuse local writes (``ReplicaDatabase/prepare(_:)``) are off here.
            try connection.setTriggersEnabled(false)
            // Reconciliation marks live in TEMP tables: keep them in a temp file (bounded by the
            // page cache), never all in RAM, whatever the build's default.
            try connection.execute("PRAGMA temp_store = FILE")
            // A sweep marks every listed id in a TEMP table: with SQLite's default 2 MB cache
            // for the temp file, 1M random ids churned it (a no-change pass with its sweep took
            // 26 s; with 32 MB, 18.5 s); memory is taken only as a sweep needs it.
            try connection.execute("PRAGMA temp.cache_size = -32768")
            // Every store's sweep marks go to this one table, made before any statement is
            // prepared (see beginReconciliation).
            try connection.execute("CREATE TEMP TABLE ferry_present(store_id INTEGER NOT NULL, id TEXT NOT NULL, PRIMARY KEY(store_id, id)) WITHOUT ROWID")
            try VersionOrder.register(on: connection)
        } catch let error as SQLiteError {
            throw StoreError(error, path: path)
        } catch {
            throw error as! StoreError
        }
        try Migrations.migrate(connection, path: path)
    }

    private init(readOnlyConnection: SQLiteConnection, path: String) {
        self.path = path
        self.connection = readOnlyConnection
        isReadOnly = true
        integrityCheckDeferred = false
    }

    /// Opens an existing, fully migrated replica read-only (for `ferry status` and
    /// `ferry changes`). Never migrates: an older schema is `.outdatedSchema`.
    public static func openReadOnly(path: String) throws(StoreError) -> ReplicaDatabase {
        guard FileManager.default.fileExists(atPath: path) else {
            throw StoreError(.io, path: path, message: "no replica at this path (ferryd creates it on its first pass)")
        }
        let connection: SQLiteConnection
        do { connection = try SQLiteConnection(path: path, mode: .readOnly) } catch { throw diagnosed(StoreError(error, path: path), readOnly: true) }
        do {
            try verify(connection, path: path, readOnly: true, checkIntegrity: false)
        } catch {
            connection.close()
            throw diagnosed(error, readOnly: true)
        }
        return ReplicaDatabase(readOnlyConnection: connection, path: path)
    }

    /// A failure to open or set up the file, said in the file system's words when they explain
    /// it better than SQLite's ("unable to open database file (errno 2)").
    private static func diagnosed(_ error: StoreError, readOnly: Bool) -> StoreError {
        switch error.kind {
        case .readOnly, .io, .other:
            guard let problem = ReplicaPathDiagnosis.problem(opening: error.path, readOnly: readOnly) else { return error }
            var diagnosed = error
            diagnosed.kind = .readOnly
            diagnosed.message = problem
            diagnosed.sqliteCode = nil
            return diagnosed
        default:
            return error
        }
    }

    /// Checks an existing file before anything uses it: Ferry's, not from a newer Ferry, and,
    /// for the writer, intact (`quick_check`).
    private static func verify(_ connection: SQLiteConnection, path: String, readOnly: Bool, checkIntegrity: Bool) throws(StoreError) {
        do {
            let applicationID = try connection.scalarInt("PRAGMA application_id") ?? 0
            let version = try Migrations.version(of: connection)
            guard applicationID == Migrations.applicationID else {
                if applicationID == 0, version == 0, try connection.scalarInt("SELECT count(*) FROM sqlite_schema") == 0 {
                    // An empty SQLite file (e.g. created by `sqlite3 file ''`): nothing to lose.
                    if !readOnly { return }
                }
                throw StoreError(.notFerryDatabase, path: path, message: "not a Ferry replica (application_id \(applicationID)); refusing to use or overwrite it")
            }
            if version > Migrations.currentVersion {
                throw StoreError(.newerSchema(found: version, supported: Migrations.currentVersion), path: path, message: "written by a newer Ferry (schema \(version), this binary knows up to \(Migrations.currentVersion)); refusing to touch it")
            }
            if readOnly, version < Migrations.currentVersion {
                throw StoreError(.outdatedSchema(found: version, supported: Migrations.currentVersion), path: path, message: "schema \(version) is older than this binary's \(Migrations.currentVersion); start ferryd once to migrate it")
            }
            // A reader never writes, so it cannot spread damage, and SQLite reports a damaged
            // page it reads as SQLITE_CORRUPT; checking every page first made `ferry status` on
            // a 787 MB replica take 14 s from a cold cache instead of under 1 s.
            if checkIntegrity { try quickCheck(connection, path: path) }
        } catch let error as SQLiteError {
            var failure = StoreError(error, path: path)
            if failure.kind == .notFerryDatabase { failure.message = "not a SQLite database, so not a Ferry replica; refusing to use or overwrite it" }
            if failure.kind == .corrupt { failure.message = "damaged (\(error.message)); refusing to use it, restore it or move it away" }
            throw failure
        } catch {
            throw error as! StoreError
        }
    }

    /// Up to this size, ferryd and `ferry sync` check a replica (`quick_check`) before they use
    /// it, which costs at most about a second from a cold cache; a larger one is checked beside
    /// the passes, so a start does not wait on reading every page (about 13 s per 800 MB here,
    /// minutes at 10M records).
    public static let integrityCheckedBeforeUseUpTo: Int64 = 64 << 20

    /// How long a passed integrity check of a large replica stands.
    public static let integrityCheckEvery: TimeInterval = 86_400

    private static let integrityCheckedKey = "integrity_checked"

    /// Whether the last passed integrity check (``recordIntegrityCheck(at:)``) is older than
    /// ``integrityCheckEvery``, or in the future (a clock set back), or missing.
    private static func integrityCheckDue(_ connection: SQLiteConnection, now: Date) -> Bool {
        guard let text = try? connection.scalarText("SELECT value FROM ferry_meta WHERE key = '\(integrityCheckedKey)'"),
              let seconds = Double(text) else { return true }
        let age = now.timeIntervalSince1970 - seconds
        return age < 0 || age >= integrityCheckEvery
    }

    /// Notes that ``checkIntegrity(path:)`` passed, so a large replica opened within
    /// ``integrityCheckEvery`` is not read whole again.
    public func recordIntegrityCheck(at date: Date) throws(StoreError) {
        requireWritable()
        do {
            let statement = try connection.prepare("INSERT INTO ferry_meta(key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = excluded.value")
            try statement.bind(Self.integrityCheckedKey, at: 1)
            try statement.bind(String(Self.timestamp(date)), at: 2)
            try statement.run()
        } catch { throw StoreError(error, path: path) }
    }

    /// Every page of the file at `path`, checked on a read-only connection of its own
    /// (`PRAGMA quick_check`), so a writer may go on meanwhile. Throws `.corrupt` naming what
    /// SQLite found.
    public static func checkIntegrity(path: String) throws(StoreError) {
        let connection: SQLiteConnection
        do { connection = try SQLiteConnection(path: path, mode: .readOnly) } catch { throw StoreError(error, path: path) }
        defer { connection.close() }
        do {
            try quickCheck(connection, path: path)
        } catch let error as SQLiteError {
            throw StoreError(error, path: path)
        } catch {
            throw error as! StoreError
        }
    }

    private static func quickCheck(_ connection: SQLiteConnection, path: String) throws -> Void {
        let check = try connection.textRows("PRAGMA quick_check")
        guard check == ["ok"] else {
            throw StoreError(.corrupt, path: path, message: "failed quick_check (\(check.prefix(3).joined(separator: "; "))); refusing to use it, restore it or move it away")
        }
    }

    /// Closes the connection. Unfinished reconciliations are dropped with it. Any later call is
    /// a programming error (SQLite reports misuse, which traps).
    public func close() {
        stopCheckpointer()
        stores.removeAll()
        reconciliations.removeAll()
        // Every claim of this connection goes with its file (its rows hold nothing without it).
        passLock?.close()
        heldClaims.removeAll()
        connection.close()
    }

    // A checkpointer's thread would otherwise outlive a replica dropped in bulk mode.
    deinit { stopCheckpointer() }

    /// `PRAGMA integrity_check`: "ok" when the file is sound, otherwise SQLite's findings.
    public func integrityCheck() throws(StoreError) -> String {
        do { return try connection.textRows("PRAGMA integrity_check").joined(separator: "\n") } catch { throw StoreError(error, path: path) }
    }

    /// Live rows of a store (tombstones excluded).
    public func recordCount(of store: String) throws(StoreError) -> Int {
        do {
            return Int(try connection.scalarInt("SELECT count(*) FROM \(quoted(store)) WHERE deleted = 0") ?? 0)
        } catch { throw StoreError(error, path: path, store: store) }
    }

    /// Whether the store has any live record. Cheap at any size (one index probe), unlike
    /// ``recordCount(of:)``.
    public func hasRecords(in store: String) throws(StoreError) -> Bool {
        do {
            return try connection.scalarInt("SELECT EXISTS (SELECT 1 FROM \(quoted(store)) WHERE deleted = 0)") == 1
        } catch { throw StoreError(error, path: path, store: store) }
    }

    /// Tunes the connection for a big first sync: a page cache of `cacheMiB`, and the WAL
    /// copied into the database by a ``WALCheckpointer`` beside the writer instead of inside
    /// its commits. Merged in the remote's order, random ids touch random index pages: 64 MB
    /// (the default) there; 128 MB bought ~5% more rows/s over 1M random ids and cost ~65 MB
    /// more peak memory (a 1M-record pass must stay under 150 MB). Merged in id order
    /// (``SortedSpool``), pages are touched front to back and a small cache does. Turning it
    /// off stops the checkpointer, restores the previous values and checkpoints so the WAL
    /// does not stay large.
    public func setBulkMode(_ on: Bool, cacheMiB: Int = 64) throws(StoreError) {
        do {
            if on {
                guard savedPragmas == nil else { return }
                let cache = try connection.scalarInt("PRAGMA cache_size") ?? -2000
                let checkpoint = try connection.scalarInt("PRAGMA wal_autocheckpoint") ?? 1000
                try connection.execute("PRAGMA cache_size = -\(cacheMiB * 1024)")
                savedPragmas = (cache, checkpoint)
                let started = WALCheckpointer(path: path, limits: bulkCheckpointLimits)
                checkpointer = started
                let writer = connection
                connection.setCommitHook { [unowned writer] frames in
                    // Without a connection of the checkpointer's own (no descriptor left, say),
                    // the writer copies, as SQLite's automatic checkpoint would have.
                    if !started.committed(walFrames: frames) { _ = try? writer.checkpointPassively() }
                }
            } else {
                guard let saved = savedPragmas else { return }
                stopCheckpointer()
                try connection.execute("PRAGMA cache_size = \(saved.cacheSize); PRAGMA wal_autocheckpoint = \(saved.autocheckpoint)")
                savedPragmas = nil
                // PASSIVE never waits for readers; the next autocheckpoint finishes what is left.
                _ = try connection.textRows("PRAGMA wal_checkpoint(PASSIVE)")
            }
        } catch { throw StoreError(error, path: path) }
    }

    /// Ends bulk mode's checkpointer, if one runs; the writer's connection checkpoints again.
    func stopCheckpointer() {
        guard let running = checkpointer else { return }
        connection.setCommitHook(nil)
        running.stop()
        checkpointer = nil
    }

    /// Traps on a write through a read-only handle: that is a bug in the caller, not a runtime
    /// condition.
    func requireWritable(_ function: StaticString = #function) {
        precondition(!isReadOnly, "\(function) on a read-only ReplicaDatabase")
    }

    /// Seconds since 1970, the replica's time format (`datetime(time, 'unixepoch')` in SQL).
    static func timestamp(_ date: Date) -> Double { date.timeIntervalSince1970 }
}

/// Double-quotes an SQL identifier. Store and column names are validated by configuration
/// already; quoting anyway keeps a future validation bug from becoming SQL injection.
func quoted(_ identifier: String) -> String {
    "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
}

/// Single-quotes an SQL string literal (JSON paths in DDL, which cannot take parameters).
func literal(_ text: String) -> String {
    "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
}
