import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// Bulk mode's checkpointer: the WAL is copied into the database beside the writer, stays
/// bounded, and nothing written is lost or changed by where the copy runs.
@Suite("WAL checkpoints beside the writer")
struct WALCheckpointerTests {
    static let pageBytes = 4_096
    /// The WAL file's size for `frames` frames (a 32-byte header, 24 bytes per frame).
    static func walBytes(frames: Int) -> Int { 32 + frames * (pageBytes + 24) }

    @Test func bulkWritesAreCheckpointedBesideTheWriter_theWALStaysBounded_everyRowIsKept() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("replica.db")
        let replica = try ReplicaDatabase(path: path)
        defer { replica.close() }
        try replica.prepare(StoreDefinition(name: "items"))
        let limits = WALCheckpointer.Limits(start: 16, wait: 64)
        replica.bulkCheckpointLimits = limits
        try replica.setBulkMode(true)
        let checkpointer = try #require(replica.checkpointer, "bulk mode started no checkpointer")

        let padding = String(repeating: "p", count: 600)
        var largestWAL = 0
        for batch in 0 ..< 150 {
            let changes = (0 ..< 40).map { record("id-\(batch)-\($0)", version: "1", "\(padding)\(batch)") }
            _ = try replica.apply(ChangeBatch(changes: changes, cursor: "batch \(batch)"), to: "items")
            let wal = (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
            largestWAL = max(largestWAL, wal)
        }
        let counts = checkpointer.counts
        #expect(counts.checkpoints > 0)
        #expect(counts.failures == 0)
        // A batch writes well under 64 pages: the WAL starts over before it holds `wait`
        // frames and one more batch.
        #expect(largestWAL <= Self.walBytes(frames: Int(limits.wait) + 64), "the WAL grew to \(largestWAL) bytes")
        // The writer's connection does not copy: its automatic checkpoint was replaced (SQLite
        // reports 0 while another hook is installed).
        #expect(try replica.connection.scalarInt("PRAGMA wal_autocheckpoint") == 0)

        try replica.setBulkMode(false)
        #expect(replica.checkpointer == nil)
        #expect(try replica.connection.scalarInt("PRAGMA wal_autocheckpoint") == 1_000)
        #expect(try replica.rows(of: "items").count == 150 * 40)
        #expect(try replica.syncState(of: "items")?.cursor == "batch 149")
        #expect(try replica.integrityCheck() == "ok")

        // Another connection reads every row from the file.
        let reader = try ReplicaDatabase.openReadOnly(path: path)
        defer { reader.close() }
        #expect(try reader.recordCount(of: "items") == 150 * 40)
    }

    @Test func aReplicaClosedInBulkModeStopsItsCheckpointer() throws {
        let directory = try TemporaryDirectory()
        let replica = try ReplicaDatabase(path: directory.path("replica.db"))
        try replica.prepare(StoreDefinition(name: "items"))
        replica.bulkCheckpointLimits = WALCheckpointer.Limits(start: 1, wait: 4)
        try replica.setBulkMode(true)
        let checkpointer = try #require(replica.checkpointer)
        _ = try replica.apply(ChangeBatch(changes: (0 ..< 100).map { record("id\($0)", version: "1") }, cursor: nil), to: "items")
        replica.close()
        // Stopped: a commit reported now neither asks for nor waits on a checkpoint.
        let before = checkpointer.counts.checkpoints
        #expect(checkpointer.committed(walFrames: 1_000))
        #expect(checkpointer.counts.checkpoints == before)
    }

    @Test func withoutAConnectionOfItsOwnTheWriterIsToldToCheckpointItself() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("plain.db")
        let plain = try SQLiteConnection(path: path, mode: .readWriteCreate)
        try plain.execute("CREATE TABLE t(x)")
        plain.close()
        #expect(throws: SQLiteError.self) { _ = try WALCheckpointer.open(path) }

        let checkpointer = WALCheckpointer(path: path, limits: WALCheckpointer.Limits(start: 2, wait: 8))
        defer { checkpointer.stop() }
        // Below the start nothing is asked, nothing opened.
        #expect(checkpointer.committed(walFrames: 1))
        // At the wait limit the writer learns that nobody copies for it.
        #expect(!checkpointer.committed(walFrames: 8))
        #expect(!checkpointer.committed(walFrames: 3))
        #expect(checkpointer.counts.checkpoints == 0)
    }

    @Test func aSmallBulkWriteStartsNoThread() throws {
        let directory = try TemporaryDirectory()
        let replica = try ReplicaDatabase(path: directory.path("replica.db"))
        defer { replica.close() }
        try replica.prepare(StoreDefinition(name: "items"))
        try replica.setBulkMode(true)
        _ = try replica.apply(ChangeBatch(changes: (0 ..< 20).map { record("id\($0)", version: "1") }, cursor: nil), to: "items")
        let checkpointer = try #require(replica.checkpointer)
        #expect(checkpointer.counts.checkpoints == 0)
        try replica.setBulkMode(false)
        #expect(try replica.rows(of: "items").count == 20)
    }
}
