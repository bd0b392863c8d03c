import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// A store without `push = yes` refuses every other client's write to its table with a clear
/// error, and Ferry's own merges go on.
@Suite("Local writes are refused, not lost")
struct LocalWriteGuardTests {
    static func seeded(in directory: TemporaryDirectory) throws -> ReplicaDatabase {
        let replica = try ReplicaDatabase(path: directory.path("replica.db"))
        try replica.prepare(StoreDefinition(name: "quotes"))
        _ = try replica.apply(ChangeBatch(changes: (0..<3).map { record("q\($0)", version: "1") }, cursor: "c1"), to: "quotes")
        return replica
    }

    @Test(arguments: [
        "INSERT INTO quotes(id, version, body, first_seen, last_synced) VALUES ('new', '1', '{}', 0, 0)",
        "UPDATE quotes SET body = '{\"readCount\":1}' WHERE id = 'q1'",
        "DELETE FROM quotes WHERE id = 'q2'",
    ])
    func anotherConnectionsWriteIsRefusedWithTheReason(_ sql: String) throws {
        let directory = try TemporaryDirectory()
        let replica = try Self.seeded(in: directory)
        defer { replica.close() }
        let before = try replica.rows(of: "quotes")
        let other = try SQLiteConnection(path: directory.path("replica.db"), mode: .readWrite)
        defer { other.close() }
        let error = #expect(throws: SQLiteError.self) { try other.execute(sql) }
        #expect(error?.message.contains(#"ferry: store "quotes" is read-only"#) == true, "\(String(describing: error))")
        #expect(try replica.rows(of: "quotes") == before)
    }

    @Test func theSQLiteShellIsRefusedToo() throws {
        let sqlite3 = try #require(TestTools.executable("sqlite3"), "sqlite3 is installed by scripts/test.sh")
        let directory = try TemporaryDirectory()
        let replica = try Self.seeded(in: directory)
        defer { replica.close() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: sqlite3)
        process.arguments = [directory.path("replica.db"), "UPDATE quotes SET body = '{}' WHERE id = 'q0'"]
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        process.waitUntilExit()
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus != 0)
        #expect(text.contains("is read-only: set push = yes in its section"), "\(text)")
    }

    @Test func ferrysOwnMergesStillWrite_andPreparingAgainChangesNoSchema() throws {
        let directory = try TemporaryDirectory()
        let replica = try Self.seeded(in: directory)
        defer { replica.close() }
        let schema = try replica.connection.scalarInt("PRAGMA schema_version")
        try replica.prepare(StoreDefinition(name: "quotes"))
        #expect(try replica.connection.scalarInt("PRAGMA schema_version") == schema, "no DDL when the guards are in place")
        _ = try replica.apply(ChangeBatch(changes: [record("q0", version: "2", "changed"), .delete(id: "q1")], cursor: "c2"), to: "quotes")
        let rows = try replica.rows(of: "quotes")
        #expect(rows.keys.sorted() == ["q0", "q2"])
    }

    @Test func aGuardAnOlderFerryWordedOtherwiseIsReplaced() throws {
        let directory = try TemporaryDirectory()
        let replica = try Self.seeded(in: directory)
        defer { replica.close() }
        let name = ReplicaDatabase.localWriteGuardName(store: "quotes", operation: "UPDATE")
        // As an older Ferry left it: its own words, and the fingerprint of its own schema.
        try replica.connection.execute("DROP TRIGGER \(quoted(name)); CREATE TRIGGER \(quoted(name)) BEFORE UPDATE ON quotes BEGIN SELECT RAISE(ABORT, 'old words'); END")
        try replica.connection.execute("UPDATE ferry_stores SET schema_fingerprint = 1 WHERE name = 'quotes'")
        try replica.prepare(StoreDefinition(name: "quotes"))
        let sql = try replica.connection.scalarText("SELECT sql FROM sqlite_schema WHERE name = \(literal(name))")
        #expect(sql == ReplicaDatabase.localWriteGuard(store: "quotes", operation: "UPDATE"))
        let recorded = try replica.connection.scalarInt("SELECT schema_fingerprint FROM ferry_stores WHERE name = 'quotes'")
        #expect(recorded == ReplicaDatabase.schemaFingerprint(of: StoreDefinition(name: "quotes"), storeID: 1))
    }

    /// A pass trusts the recorded fingerprint; `ferry resync` checks sqlite_schema itself.
    @Test func aGuardAnotherProgramDroppedComesBackWithAVerifyingPrepare() throws {
        let directory = try TemporaryDirectory()
        let replica = try Self.seeded(in: directory)
        defer { replica.close() }
        let name = ReplicaDatabase.localWriteGuardName(store: "quotes", operation: "DELETE")
        try replica.connection.execute("DROP TRIGGER \(quoted(name))")
        try replica.prepare(StoreDefinition(name: "quotes"), verifyingSchema: true)
        let sql = try replica.connection.scalarText("SELECT sql FROM sqlite_schema WHERE name = \(literal(name))")
        #expect(sql == ReplicaDatabase.localWriteGuard(store: "quotes", operation: "DELETE"))
    }

    @Test func aTableDroppedBehindFerrysBackIsMadeAgainByTheNextPrepare() throws {
        let directory = try TemporaryDirectory()
        let replica = try Self.seeded(in: directory)
        defer { replica.close() }
        try replica.connection.execute("DROP TABLE quotes")
        try replica.prepare(StoreDefinition(name: "quotes"))
        _ = try replica.apply(ChangeBatch(changes: [record("q9", version: "1")], cursor: "c2"), to: "quotes")
        #expect(try replica.rows(of: "quotes").keys.sorted() == ["q9"])
        let guards = try replica.connection.scalarInt("SELECT count(*) FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = 'quotes'")
        #expect(guards == 3)
    }

    /// A pass's end lets its statements go; what it prepared is not used again unprepared.
    @Test func aReleasedStoreMustBePreparedAgain() throws {
        let directory = try TemporaryDirectory()
        let replica = try Self.seeded(in: directory)
        defer { replica.close() }
        replica.release("quotes")
        let error = #expect(throws: StoreError.self) {
            try replica.apply(ChangeBatch(changes: [record("q9", version: "1")], cursor: "c2"), to: "quotes")
        }
        #expect(error?.message.contains("not prepared") == true)
        try replica.prepare(StoreDefinition(name: "quotes"))
        _ = try replica.apply(ChangeBatch(changes: [record("q9", version: "1")], cursor: "c2"), to: "quotes")
        #expect(try replica.rows(of: "quotes").count == 4)
    }
}
