import CSQLite
import Foundation

/// Copies a replica's WAL into its database file on a thread and connection of its own while a
/// bulk write runs (``ReplicaDatabase/setBulkMode(_:cacheMiB:)``), so the writer's commits do
/// not wait on the copy. SQLite's automatic checkpoint runs inside the commit that crosses its
/// threshold: in a 1M-record first sync that was a sixth of the merge, on the pass's thread,
/// while the second core idled.
///
/// The writer's connection reports each commit (``committed(walFrames:)``, from its commit
/// hook). Past ``Limits/start`` frames a passive checkpoint is asked for and the writer goes
/// on. Checkpoints that overlap commits never copy the newest frames, so the WAL only starts
/// over once a checkpoint has copied everything before the next write: past ``Limits/wait``
/// frames the writer waits for a checkpoint begun after its commit. That bounds the WAL (and
/// the disk it takes beside the database) to about `wait` frames.
///
/// Checkpoints are crash-safe wherever they run: a crash in the middle leaves the WAL as the
/// record, and the next open finishes the copy. A failing checkpoint loses nothing either; the
/// writer's own checkpoint when bulk mode ends reports it (``ReplicaDatabase``).
final class WALCheckpointer: @unchecked Sendable {
    /// WAL sizes, in frames of one page (4 KiB by default).
    struct Limits: Sendable {
        /// Ask for a checkpoint from this many frames on (16 MB).
        var start: Int32 = 4_096
        /// Wait for one from this many frames on (64 MB).
        var wait: Int32 = 16_384
    }

    private enum State {
        /// No checkpoint asked for yet: no thread, no connection (a small first sync never
        /// needs one).
        case idle
        case running
        /// The thread could not open its connection: the writer checkpoints itself.
        case unavailable
        case stopping
        case stopped
    }

    private let path: String
    private let limits: Limits
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var state = State.idle
    /// Checkpoints asked for and done, as generations: the thread works while `done < asked`.
    private var asked = 0
    private var done = 0
    private var failures = 0

    /// A checkpointer for `path` (a WAL-mode database). Its thread and connection start with
    /// the first checkpoint asked for.
    init(path: String, limits: Limits = Limits()) {
        self.path = path
        self.limits = limits
    }

    /// The writer committed and the WAL now holds `walFrames` frames. Called on the writer's
    /// thread, under no lock of SQLite's. Returns false when the writer must checkpoint
    /// itself: this checkpointer could not open its connection.
    func committed(walFrames: Int32) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        switch state {
        case .idle:
            guard walFrames >= limits.start else { return true }
            state = .running
            Thread.start(named: "ferry-checkpoint") { [self] in work() }
        case .running: break
        case .unavailable: return walFrames < limits.start
        case .stopping, .stopped: return true
        }
        if walFrames >= limits.wait {
            // A checkpoint that starts after this commit copies every frame (no write comes
            // until it ends), so the writer's next transaction starts the WAL over.
            asked += 1
            let wanted = asked
            condition.broadcast()
            while done < wanted, case .running = state { condition.wait() }
            if case .unavailable = state { return false }
        } else if walFrames >= limits.start, done == asked {
            asked += 1
            condition.broadcast()
        }
        return true
    }

    /// Checkpoints that ran, and those that failed (tests; the next one retries).
    var counts: (checkpoints: Int, failures: Int) {
        condition.lock()
        defer { condition.unlock() }
        return (done, failures)
    }

    /// Ends the thread after the checkpoint it may be running and closes its connection.
    /// Safe to call again.
    func stop() {
        condition.lock()
        defer { condition.unlock() }
        switch state {
        case .idle, .unavailable, .stopped:
            state = .stopped
            return
        case .running:
            state = .stopping
        case .stopping:
            break
        }
        condition.broadcast()
        while true {
            if case .stopped = state { return }
            condition.wait()
        }
    }

    private func work() {
        let connection: SQLiteConnection
        do {
            connection = try Self.open(path)
        } catch {
            condition.lock()
            state = .unavailable
            condition.broadcast()
            condition.unlock()
            return
        }
        condition.lock()
        while true {
            while done == asked, case .running = state { condition.wait() }
            guard case .running = state else { break }
            let generation = asked
            condition.unlock()
            let failed: Bool
            do { _ = try connection.checkpointPassively(); failed = false } catch { failed = true }
            condition.lock()
            done = generation
            if failed { failures += 1 }
            condition.broadcast()
        }
        connection.close()
        state = .stopped
        condition.broadcast()
        condition.unlock()
    }

    /// A connection of the checkpointer's own, already reading the file in WAL mode: until a
    /// connection has read it, a checkpoint does nothing and says it copied everything.
    static func open(_ path: String) throws(SQLiteError) -> SQLiteConnection {
        let connection = try SQLiteConnection(path: path, mode: .readWrite)
        do throws(SQLiteError) {
            guard try connection.scalarText("PRAGMA journal_mode")?.lowercased() == "wal",
                  try connection.scalarInt("SELECT count(*) FROM sqlite_schema") != nil else {
                throw SQLiteError(extendedCode: SQLITE_ERROR, message: "not in WAL mode", sql: "PRAGMA journal_mode")
            }
        } catch {
            connection.close()
            throw error
        }
        return connection
    }
}
