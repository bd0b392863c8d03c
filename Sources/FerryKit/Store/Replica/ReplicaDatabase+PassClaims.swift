import Foundation

/// One pass of a store at a time, across every process that opens the replica: ferryd,
/// `ferry sync` and `ferry push` claim the store in `ferry_pass_claims` before they push or
/// pull, and let go when the pass ends. Two pushers of one store could both send a create
/// whose answer the other then renames or deletes; two pulls would each fetch everything.
///
/// A claim names its process by pid and start time (``ProcessIdentity``), so a process killed
/// with its claim standing (SIGKILL, a power cut) holds nothing: the next claimant sees it is
/// gone and takes over. Within one process a claim is told apart by its token (one per pass).
extension ReplicaDatabase {
    /// Who holds a store's pass.
    public struct PassClaimHolder: Sendable, Equatable, CustomStringConvertible {
        public var pid: Int32
        /// The program and subcommand (`ferryd`, `ferry sync`).
        public var command: String
        public var since: Date

        public var description: String {
            "\(command) (pid \(pid)), since \(InternetTimestamp.string(from: since))"
        }
    }

    /// Claims `store`'s pass for this process under `token` (one per pass). Returns nil when
    /// claimed (or already ours), else the live process that holds it.
    public func claimPass(of store: String, token: String, at date: Date) throws(StoreError) -> PassClaimHolder? {
        requireWritable()
        do {
            guard let storeID = try storeID(of: store) else { return nil }
            return try connection.transaction { () throws(SQLiteError) -> PassClaimHolder? in
                // A claim an earlier pass of ours could not let go of is ours, not another
                // pass's: without this, ferryd would call every later pass of a store busy.
                if let standing = try liveClaim(of: storeID), standing.token != token, strandedClaims[storeID] != standing.token {
                    return standing.holder
                }
                let me = ProcessIdentity.current
                let claim = try connection.prepare("""
                    INSERT INTO ferry_pass_claims(store_id, pid, process_start, token, command, claimed) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                    ON CONFLICT(store_id) DO UPDATE SET pid = excluded.pid, process_start = excluded.process_start, token = excluded.token,
                        command = excluded.command, claimed = excluded.claimed
                    """)
                try claim.bind(storeID, at: 1)
                try claim.bind(Int64(me.pid), at: 2)
                try claim.bind(me.start, at: 3)
                try claim.bind(token, at: 4)
                try claim.bind(ProcessIdentity.command, at: 5)
                try claim.bind(Self.timestamp(date), at: 6)
                try claim.run()
                strandedClaims[storeID] = nil
                return nil
            }
        } catch { throw StoreError(error, path: path, store: store) }
    }

    /// Lets go of a claim `token` holds; nothing when it holds none. Never fails a pass: a claim
    /// that cannot be let go of (a full or read-only replica) is remembered as this process's
    /// own, taken over by its next pass of the store, and by anyone once the process ends.
    public func releasePass(of store: String, token: String) {
        guard let storeID = try? storeID(of: store) else { return }
        do {
            let release = try connection.prepare("DELETE FROM ferry_pass_claims WHERE store_id = ?1 AND token = ?2")
            try release.bind(storeID, at: 1)
            try release.bind(token, at: 2)
            try release.run()
        } catch {
            strandedClaims[storeID] = token
        }
    }

    /// Who holds `store`'s pass now, if a live process does.
    public func passClaimHolder(of store: String) throws(StoreError) -> PassClaimHolder? {
        do {
            guard let storeID = try storeID(of: store) else { return nil }
            return try liveClaim(of: storeID)?.holder
        } catch { throw StoreError(error, path: path, store: store) }
    }

    /// The store's claim and its token, when the process that made it still runs.
    private func liveClaim(of storeID: Int64) throws(SQLiteError) -> (holder: PassClaimHolder, token: String)? {
        let read = try connection.prepare("SELECT pid, process_start, token, command, claimed FROM ferry_pass_claims WHERE store_id = ?1")
        try read.bind(storeID, at: 1)
        defer { read.reset() }
        guard try read.step() else { return nil }
        let process = ProcessIdentity(pid: Int32(read.int64(at: 0)), start: read.string(at: 1) ?? "")
        guard process.isRunning else { return nil }
        return (PassClaimHolder(pid: process.pid, command: read.string(at: 3) ?? "?", since: Date(timeIntervalSince1970: read.double(at: 4))),
                read.string(at: 2) ?? "")
    }
}
