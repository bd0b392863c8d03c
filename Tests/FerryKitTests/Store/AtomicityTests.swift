import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

@Suite("Replica batch atomicity")
struct AtomicityTests {
    /// Rows, cursor and change log: everything a failed batch must leave untouched.
    struct Snapshot: Equatable {
        var rows: [String: String]
        var cursor: String?
        var log: [ChangeLogEntry]

        init(_ replica: ReplicaDatabase) throws {
            rows = try replica.rows(of: "items")
            cursor = try replica.syncState(of: "items")?.cursor
            log = try replica.changes(after: 0, limit: 10_000)
        }
    }

    static func seeded(policy: BadRecordPolicy, in directory: TemporaryDirectory) throws -> ReplicaDatabase {
        let replica = try ReplicaDatabase(path: directory.path("replica.db"))
        try replica.prepare(StoreDefinition(name: "items", badRecordPolicy: policy, maxRecordBytes: 1_000))
        _ = try replica.apply(ChangeBatch(changes: (0..<5).map { record("r\($0)", version: "1") }, cursor: "c1"), to: "items")
        return replica
    }

    @Test func badRecordUnderFailAppliesNothing() throws {
        let directory = try TemporaryDirectory()
        let replica = try Self.seeded(policy: .fail, in: directory)
        let before = try Snapshot(replica)
        let batch = ChangeBatch(changes: [
            record("r0", version: "2"), record("new", version: "1"), .delete(id: "r1"),
            .upsert(RemoteRecord(id: "bad", version: "1", body: Data([0xC3, 0x28]))),
            record("r2", version: "2"),
        ], cursor: "c2")
        do throws(StoreError) {
            _ = try replica.apply(batch, to: "items")
            Issue.record("a bad record under .fail must throw")
        } catch {
            #expect(error.kind == .badRecord)
            #expect(error.store == "items")
            #expect(error.recordID == "bad")
            #expect(error.position == 3)
            #expect(error.description.contains("items") && error.description.contains("bad"))
        }
        #expect(try Snapshot(replica) == before)
    }

    @Test func parserProblemUnderFailAppliesNothing() throws {
        let directory = try TemporaryDirectory()
        let replica = try Self.seeded(policy: .fail, in: directory)
        let before = try Snapshot(replica)
        let batch = ChangeBatch(changes: [record("x", version: "1")], cursor: "c2", problems: [RecordProblem(position: 12, reason: "id is not a string")])
        expectStoreError(.badRecord) { try replica.apply(batch, to: "items") }
        #expect(try Snapshot(replica) == before)
    }

    /// A failure inside SQLite after part of the batch was written (a trigger aborting on the
    /// fourth change) rolls back the rows already written, the cursor and the log entries.
    @Test func sqliteFailureMidBatchRollsBackEverything() throws {
        let directory = try TemporaryDirectory()
        let replica = try Self.seeded(policy: .skip, in: directory)
        try replica.connection.execute("CREATE TEMP TRIGGER boom BEFORE INSERT ON main.items WHEN NEW.id = 'boom' BEGIN SELECT RAISE(ABORT, 'injected failure'); END")
        let before = try Snapshot(replica)
        let batch = ChangeBatch(changes: [
            record("r0", version: "2"), record("new", version: "1"), .delete(id: "r1"), record("boom", version: "1"), record("r2", version: "2"),
        ], cursor: "c2")
        do throws(StoreError) {
            _ = try replica.apply(batch, to: "items")
            Issue.record("the trigger must fail the batch")
        } catch {
            #expect(error.recordID == "boom")
            #expect(error.store == "items")
            #expect(error.sqliteCode.map { $0 & 0xff } == 19) // SQLITE_CONSTRAINT from RAISE(ABORT)
            #expect(error.message.contains("injected failure"))
        }
        #expect(try Snapshot(replica) == before)
        #expect(replica.connection.isAutocommit)

        // The connection is still usable and the next batch applies normally.
        try replica.connection.execute("DROP TRIGGER temp.boom")
        let counts = try replica.apply(batch, to: "items")
        #expect(counts == MergeCounts(inserted: 2, updated: 2, deleted: 1))
        #expect(try replica.syncState(of: "items")?.cursor == "c2")
        #expect(try replica.integrityCheck() == "ok")
    }

    @Test func transactionFirstErrorWinsAndRollbackRuns() throws {
        let directory = try TemporaryDirectory()
        let connection = try SQLiteConnection(path: directory.path("t.db"), mode: .readWriteCreate)
        try connection.execute("CREATE TABLE t(x INTEGER)")
        struct Injected: Error {}
        #expect(throws: Injected.self) {
            try connection.transaction(mapError: { $0 as any Error }) { () throws(any Error) in
                try connection.execute("INSERT INTO t VALUES (1)")
                throw Injected()
            }
        }
        #expect(connection.isAutocommit)
        #expect(try connection.scalarInt("SELECT count(*) FROM t") == 0)
        // SQLite errors are pattern-matchable by code.
        do {
            try connection.execute("INSERT INTO nowhere VALUES (1)")
        } catch SQLiteError.error {
            // expected: SQLITE_ERROR "no such table"
        } catch {
            Issue.record("unexpected \(error)")
        }
    }
}
