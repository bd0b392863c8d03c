import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

@Suite("Replica locking")
struct LockingTests {
    /// Another process's writer holding the lock past the busy timeout gives `.busy` and leaves
    /// the batch unapplied; a reader's open transaction never blocks the writer (WAL).
    @Test func busyWriterIsATypedErrorAndReadersDoNotBlock() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("replica.db")
        let replica = try ReplicaDatabase(path: path, busyTimeoutMilliseconds: 100)
        try replica.prepare(StoreDefinition(name: "items"))
        _ = try replica.apply(ChangeBatch(changes: [record("a", version: "1")], cursor: "c1"), to: "items")

        let reader = try SQLiteConnection(path: path, mode: .readOnly)
        try reader.execute("BEGIN")
        #expect(try reader.scalarInt("SELECT count(*) FROM items") == 1)
        _ = try replica.apply(ChangeBatch(changes: [record("b", version: "1")], cursor: "c2"), to: "items")
        // The reader's snapshot is stable; the writer was not blocked by it.
        #expect(try reader.scalarInt("SELECT count(*) FROM items") == 1)
        try reader.execute("COMMIT")
        #expect(try reader.scalarInt("SELECT count(*) FROM items") == 2)

        let other = try SQLiteConnection(path: path, mode: .readWrite, busyTimeout: 0)
        try other.execute("BEGIN IMMEDIATE")
        expectStoreError(.busy) { try replica.apply(ChangeBatch(changes: [record("c", version: "1")], cursor: "c3"), to: "items") }
        try other.execute("ROLLBACK")
        #expect(try replica.syncState(of: "items")?.cursor == "c2")
        _ = try replica.apply(ChangeBatch(changes: [record("c", version: "1")], cursor: "c3"), to: "items")
        #expect(try replica.recordCount(of: "items") == 3)
    }
}
