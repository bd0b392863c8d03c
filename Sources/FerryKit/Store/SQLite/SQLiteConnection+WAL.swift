import CSQLite

extension SQLiteConnection {
    /// What a commit reports: the frames now in the WAL.
    typealias CommitHook = (_ walFrames: Int32) -> Void

    /// Calls `hook` on the committing thread after each commit of this connection into the WAL
    /// (the write lock is already released), in place of SQLite's automatic checkpoint; nil
    /// removes it. `PRAGMA wal_autocheckpoint` replaces it too, so remove it first.
    func setCommitHook(_ hook: CommitHook?) {
        guard let hook else {
            sqlite3_wal_hook(handle, nil, nil)
            commitHook = nil
            return
        }
        let box = CommitHookBox(hook)
        // The connection keeps the box alive for as long as SQLite may call it.
        commitHook = box
        sqlite3_wal_hook(handle, { context, _, _, frames in
            Unmanaged<CommitHookBox>.fromOpaque(context!).takeUnretainedValue().hook(frames)
            // An error here would fail the statement whose commit already took place.
            return SQLITE_OK
        }, Unmanaged.passUnretained(box).toOpaque())
    }

    /// Copies what the WAL holds into the database file without waiting for readers or the
    /// writer (`SQLITE_CHECKPOINT_PASSIVE`). Returns whether every frame was copied: then the
    /// writer's next transaction starts the WAL over from its beginning. Another checkpoint
    /// running (`SQLITE_BUSY`) copies nothing and is not an error.
    func checkpointPassively() throws(SQLiteError) -> Bool {
        var frames: Int32 = 0
        var copied: Int32 = 0
        let code = sqlite3_wal_checkpoint_v2(handle, "main", SQLITE_CHECKPOINT_PASSIVE, &frames, &copied)
        if code & 0xff == SQLITE_BUSY { return false }
        try SQLite.check(code, handle, sql: "sqlite3_wal_checkpoint_v2(PASSIVE)")
        // -1: the connection is not in WAL mode, so nothing was copied.
        return frames >= 0 && copied == frames
    }
}

/// A commit hook held where SQLite's C callback can find it.
final class CommitHookBox {
    let hook: SQLiteConnection.CommitHook
    init(_ hook: @escaping SQLiteConnection.CommitHook) { self.hook = hook }
}
