import Foundation

/// The process's one writer connection to the replica, shared by every pass.
///
/// SQLite allows one writer at a time anyway; funnelling every write through one connection
/// behind one lock keeps busy-retries out of the hot path and lets a pass merge page N on its
/// own thread while libcurl fetches page N+1. Readers (other programs, `ferry status`) use
/// their own connections and are never blocked: the database is in WAL mode.
public final class SharedDatabase: @unchecked Sendable {
    private let lock = NSLock()
    private let database: ReplicaDatabase
    private var isClosed = false

    /// Opens (creating and migrating when needed) the replica at `path`; see
    /// ``ReplicaDatabase/init(path:deferIntegrityCheckAbove:)``.
    public init(path: String, deferIntegrityCheckAbove: Int64? = nil) throws {
        try FileManager.default.createDirectoryIfMissing(forFileAt: path)
        database = try ReplicaDatabase(path: path, deferIntegrityCheckAbove: deferIntegrityCheckAbove)
    }

    public var path: String { database.path }

    /// The owner must run ``checkIntegrityBeside(_:)``: the open skipped the check.
    public var integrityCheckDeferred: Bool { database.integrityCheckDeferred }

    /// Runs the check the open deferred (``ReplicaDatabase/checkIntegrity(path:)``) on a thread
    /// of low CPU priority and a read-only connection of its own, so passes go on meanwhile and
    /// first; a passed check is
    /// recorded, unless the database was closed by then, and `done` gets the damage found, if
    /// any, on that thread.
    public func checkIntegrityBeside(_ done: @escaping @Sendable (StoreError?) -> Void) {
        let path = database.path
        Thread.start(named: "replica check") { [self] in
            // Nothing waits for it: it takes what the passes leave of the CPU.
            Thread.current.lowerPriorityToBackground()
            var failure: StoreError?
            do throws(StoreError) { try ReplicaDatabase.checkIntegrity(path: path) } catch { failure = error }
            if failure == nil {
                // Not worth failing anything over: the next open checks again.
                _ = try? writeIfOpen { database throws(StoreError) in try database.recordIntegrityCheck(at: Date()) }
            }
            done(failure)
        }
    }

    /// Runs `body` with exclusive use of the writer connection.
    public func write<T, Failure: Error>(_ body: (ReplicaDatabase) throws(Failure) -> T) throws(Failure) -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(database)
    }

    /// Runs `body` with the writer connection unless the database was closed meanwhile (work
    /// that may outlive the daemon's stop: pruning on a background queue); nil then.
    public func writeIfOpen<T, Failure: Error>(_ body: (ReplicaDatabase) throws(Failure) -> T) throws(Failure) -> T? {
        lock.lock()
        defer { lock.unlock() }
        guard !isClosed else { return nil }
        return try body(database)
    }

    /// Closes the connection; only ``writeIfOpen(_:)`` may follow.
    public func close() {
        lock.lock()
        defer { lock.unlock() }
        guard !isClosed else { return }
        isClosed = true
        database.close()
    }
}

extension FileManager {
    /// Creates the directory that will hold `path`, so a first run needs no manual `mkdir`.
    func createDirectoryIfMissing(forFileAt path: String) throws(DatabaseLocationError) {
        let directory = (path as NSString).deletingLastPathComponent
        guard !directory.isEmpty, !fileExists(atPath: directory) else { return }
        do {
            try createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            // The nearest existing ancestor says why (permission, a read-only mount).
            var ancestor = (directory as NSString).deletingLastPathComponent
            while !ancestor.isEmpty, ancestor != "/", !fileExists(atPath: ancestor) { ancestor = (ancestor as NSString).deletingLastPathComponent }
            let reason = ReplicaPathDiagnosis.problem(opening: (ancestor as NSString).appendingPathComponent("x"))
            throw DatabaseLocationError(directory: directory, reason: reason ?? error.localizedDescription)
        }
    }
}
