import Foundation

/// One pass of a store at a time, across every process that opens the replica: ferryd,
/// `ferry sync` and `ferry push` claim the store before they push or pull, and let go when the
/// pass ends. Two pushers of one store could both send a create whose answer the other then
/// renames or deletes; two pulls would each fetch everything.
///
/// A claim is a lock the kernel holds for the claimant (``PassLockFile``: one byte per store,
/// dropped when the process ends however it ends), so whether a store is claimed never depends
/// on what the process asking may see of other processes. `ferry_pass_claims` says who holds
/// it (pid, command, since) for the messages people read; a row whose byte nobody locks holds
/// nothing. Within one connection a claim is told apart by its token (one per pass).
extension ReplicaDatabase {
    /// Who holds a store's pass.
    public struct PassClaimHolder: Sendable, Equatable, CustomStringConvertible {
        /// Nil when no row said who holds the lock (a claim being made as it was read).
        public var pid: Int32?
        /// The program and subcommand (`ferryd`, `ferry sync`).
        public var command: String
        public var since: Date?

        /// `ferryd (pid 412)`, or `another process`.
        public var name: String {
            pid.map { "\(command) (pid \($0))" } ?? command
        }

        public var description: String {
            since.map { "\(name), since \(InternetTimestamp.string(from: $0))" } ?? name
        }
    }

    /// A claim this connection holds: its pass's token.
    struct HeldClaim {
        let token: String
    }

    /// Claims `store`'s pass for this connection under `token` (one per pass). Returns nil when
    /// claimed (or already ours), else who holds it.
    public func claimPass(of store: String, token: String, at date: Date) throws(StoreError) -> PassClaimHolder? {
        requireWritable()
        guard let storeID = try storeID(orThrow: store) else { return nil }
        let lock = try passLock(for: store)
        let map = { (error: SQLiteError) in StoreError(error, path: self.path, store: store) }
        var lockedHere = false
        do throws(StoreError) {
            return try connection.transaction(mapError: map) { () throws(StoreError) -> PassClaimHolder? in
                if let held = heldClaims[storeID] {
                    if held.token != token {
                        do throws(SQLiteError) { return try recordedHolder(of: storeID) ?? Self.thisProcess } catch { throw map(error) }
                    }
                } else {
                    // Inside the write transaction: whoever takes a byte writes its row before
                    // any other claimant can look.
                    do throws(PassLockFile.Failure) {
                        lockedHere = try lock.lock(storeID)
                    } catch {
                        throw lockError(error, store: store)
                    }
                    guard lockedHere else {
                        do throws(SQLiteError) { return try recordedHolder(of: storeID) ?? Self.unnamedHolder } catch { throw map(error) }
                    }
                }
                do throws(SQLiteError) {
                    let claim = try connection.prepare("""
                        INSERT INTO ferry_pass_claims(store_id, pid, process_start, token, command, claimed) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                        ON CONFLICT(store_id) DO UPDATE SET pid = excluded.pid, process_start = excluded.process_start, token = excluded.token,
                            command = excluded.command, claimed = excluded.claimed
                        """)
                    try claim.bind(storeID, at: 1)
                    try claim.bind(Int64(getpid()), at: 2)
                    try claim.bind(ProcessIdentity.start, at: 3)
                    try claim.bind(token, at: 4)
                    try claim.bind(ProcessIdentity.command, at: 5)
                    try claim.bind(Self.timestamp(date), at: 6)
                    try claim.run()
                } catch {
                    throw map(error)
                }
                heldClaims[storeID] = HeldClaim(token: token)
                return nil
            }
        } catch {
            // The row did not land (or its commit failed): the byte is nobody's again.
            if lockedHere {
                lock.unlock(storeID)
                heldClaims[storeID] = nil
            }
            throw error
        }
    }

    /// Lets go of a claim `token` holds; nothing when it holds none. Never fails a pass: the
    /// lock goes whatever happens to the row, and a row left behind (a full or read-only
    /// replica) holds nothing, so this process's next pass of the store, or anyone's, takes it.
    public func releasePass(of store: String, token: String) {
        guard let storeID = try? storeID(of: store), heldClaims[storeID]?.token == token, let lock = passLock else { return }
        heldClaims[storeID] = nil
        do {
            // The row goes in the transaction that lets go of the byte, so no claimant sees the
            // byte locked and no row saying by whom.
            try connection.transaction { () throws(SQLiteError) in
                let release = try connection.prepare("DELETE FROM ferry_pass_claims WHERE store_id = ?1 AND token = ?2")
                try release.bind(storeID, at: 1)
                try release.bind(token, at: 2)
                try release.run()
                lock.unlock(storeID)
            }
        } catch {
            lock.unlock(storeID)
        }
    }

    /// Who holds `store`'s pass now, if anyone does.
    public func passClaimHolder(of store: String) throws(StoreError) -> PassClaimHolder? {
        guard let storeID = try storeID(orThrow: store) else { return nil }
        let recorded = { () throws(StoreError) -> PassClaimHolder? in
            do throws(SQLiteError) { return try self.recordedHolder(of: storeID) } catch { throw StoreError(error, path: self.path, store: store) }
        }
        if heldClaims[storeID] != nil { return try recorded() ?? Self.thisProcess }
        let lock = try passLock(for: store)
        do throws(PassLockFile.Failure) {
            guard try lock.isLockedElsewhere(storeID) else { return nil }
        } catch {
            throw lockError(error, store: store)
        }
        return try recorded() ?? Self.unnamedHolder
    }

    /// The lock file, opened at the first claim (made then when missing), and opened again
    /// while no claim is held when the path names another file than the one open (someone
    /// removed it): other processes lock the file the path names.
    private func passLock(for store: String) throws(StoreError) -> PassLockFile {
        do throws(PassLockFile.Failure) {
            if let lock = passLock {
                if heldClaims.isEmpty, !lock.isCurrent { try lock.reopen(like: path) }
                return lock
            }
            let lock = try PassLockFile(beside: path)
            passLock = lock
            return lock
        } catch {
            throw lockError(error, store: store)
        }
    }

    /// A failure of the lock file, as the replica's: the file, why, and who may write it.
    private func lockError(_ failure: PassLockFile.Failure, store: String) -> StoreError {
        let kind: StoreError.Kind = switch failure.errno {
        case EACCES, EPERM, EROFS: .readOnly
        case ENOSPC, EDQUOT: .full
        default: .io
        }
        let owner = FileManager.default.fileExists(atPath: failure.path) ? " (\(ReplicaPathDiagnosis.ownership(failure.path)))" : ""
        return StoreError(kind, path: path, store: store,
                          message: "\(failure)\(owner): the file beside the replica that says which process runs each store's pass; it takes the replica's owner and mode")
    }

    /// The store's id, nil when the store was never prepared in this file.
    private func storeID(orThrow store: String) throws(StoreError) -> Int64? {
        do { return try storeID(of: store) } catch { throw StoreError(error, path: path, store: store) }
    }

    /// What the store's row says of its claimant.
    private func recordedHolder(of storeID: Int64) throws(SQLiteError) -> PassClaimHolder? {
        let read = try connection.prepare("SELECT pid, command, claimed FROM ferry_pass_claims WHERE store_id = ?1")
        try read.bind(storeID, at: 1)
        defer { read.reset() }
        guard try read.step() else { return nil }
        return PassClaimHolder(pid: Int32(read.int64(at: 0)), command: read.string(at: 1) ?? "?",
                               since: Date(timeIntervalSince1970: read.double(at: 2)))
    }

    /// This process, when a claim of its own has no row (its token's row was written over).
    private static var thisProcess: PassClaimHolder {
        PassClaimHolder(pid: getpid(), command: ProcessIdentity.command, since: nil)
    }

    /// A byte locked with no row to say by whom: a claim being made as ``passClaimHolder(of:)``
    /// looked (it reads outside the claimants' write transactions).
    private static let unnamedHolder = PassClaimHolder(pid: nil, command: "another process", since: nil)
}
