import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// A push store queues every other client's write in `ferry_outbox`, in the write's own
/// transaction, and refuses writes the remote could not take; Ferry's merges queue nothing.
@Suite("Local writes are queued for the remote")
struct LocalWriteCaptureTests {
    static let pushing = StoreDefinition(name: "quotes", writeBack: WriteBackConfiguration(push: true))

    static func seeded(in directory: TemporaryDirectory, _ definition: StoreDefinition = pushing) throws -> ReplicaDatabase {
        let replica = try ReplicaDatabase(path: directory.path("replica.db"))
        try replica.prepare(definition)
        _ = try replica.apply(ChangeBatch(changes: (0..<3).map { record("q\($0)", version: "1") }, cursor: "c1"), to: "quotes")
        return replica
    }

    /// What another program sees: a connection of its own, triggers on, as every client has.
    static func client(_ directory: TemporaryDirectory) throws -> SQLiteConnection {
        try SQLiteConnection(path: directory.path("replica.db"), mode: .readWrite)
    }

    static func outbox(_ replica: ReplicaDatabase) throws -> [String] {
        try replica.connection.textRows("SELECT id || ' ' || op || ' ' || coalesce(base_version, '-') || ' g' || generation FROM ferry_outbox ORDER BY id")
    }

    @Test func anInsertWithoutAnIDIsQueuedAsACreateUnderAPlaceholder() throws {
        let directory = try TemporaryDirectory()
        let replica = try Self.seeded(in: directory)
        defer { replica.close() }
        let other = try Self.client(directory)
        defer { other.close() }
        try other.execute(#"INSERT INTO quotes(body) VALUES ('{"text":"omitted id"}')"#)
        try other.execute(#"INSERT INTO quotes(id, body) VALUES (NULL, '{"text":"null id"}')"#)
        let ids = try replica.connection.textRows("SELECT id FROM quotes WHERE version = '' ORDER BY body")
        #expect(ids.count == 2)
        #expect(ids.allSatisfy { $0.hasPrefix("local-") && $0.count == 26 }, "\(ids)")
        #expect(try Self.outbox(replica) == ids.sorted().map { "\($0) 1 - g1" })
        let changes = try replica.queuedLocalChanges(of: "quotes")
        #expect(changes.map(\.operation) == [.create, .create])
        #expect(Set(changes.compactMap(\.body)) == [#"{"text":"omitted id"}"#, #"{"text":"null id"}"#])
    }

    @Test func updatesFoldIntoOneEntryThatKeepsTheFirstBase() throws {
        let directory = try TemporaryDirectory()
        let replica = try Self.seeded(in: directory)
        defer { replica.close() }
        let other = try Self.client(directory)
        defer { other.close() }
        try other.execute(#"UPDATE quotes SET body = '{"id":"q1","value":"one"}' WHERE id = 'q1'"#)
        try other.execute(#"UPDATE quotes SET body = '{"id":"q1","value":"two"}' WHERE id = 'q1'"#)
        // Setting the same body again is no write at all.
        try other.execute(#"UPDATE quotes SET body = body WHERE id = 'q1'"#)
        #expect(try Self.outbox(replica) == ["q1 2 1 g2"])
        let change = try #require(try replica.queuedLocalChanges(of: "quotes").first)
        #expect(change.baseBody == #"{"id":"q1","value":"v"}"#)
        #expect(change.body == #"{"id":"q1","value":"two"}"#)
    }

    @Test func deletesFoldTooAndACreateDeletedBeforeItWasSentLeavesNothing() throws {
        let directory = try TemporaryDirectory()
        let replica = try Self.seeded(in: directory)
        defer { replica.close() }
        let other = try Self.client(directory)
        defer { other.close() }
        try other.execute(#"UPDATE quotes SET body = '{"id":"q2","value":"x"}' WHERE id = 'q2'"#)
        try other.execute("DELETE FROM quotes WHERE id = 'q2'")
        try other.execute(#"INSERT INTO quotes(id, body) VALUES ('mine', '{"a":1}')"#)
        try other.execute("DELETE FROM quotes WHERE id = 'mine'")
        #expect(try Self.outbox(replica) == ["q2 3 1 g2"])
        // Deleted, then inserted again under the same id: an update of the remote record.
        try other.execute(#"INSERT INTO quotes(id, body) VALUES ('q2', '{"back":true}')"#)
        #expect(try Self.outbox(replica) == ["q2 2 1 g3"])
    }

    /// The row made again under the remote's id and deleted once more: the remote record is
    /// still to be deleted, on the version the first delete saw (this was left an update of a
    /// row that no longer existed, which the push refused or dropped, and the next pull brought
    /// the record back).
    @Test func aRecordDeletedMadeAgainAndDeletedAgainIsQueuedAsItsDelete() throws {
        let directory = try TemporaryDirectory()
        let replica = try Self.seeded(in: directory)
        defer { replica.close() }
        let other = try Self.client(directory)
        defer { other.close() }
        try other.execute("DELETE FROM quotes WHERE id = 'q1'")
        try other.execute(#"INSERT INTO quotes(id, body) VALUES ('q1', '{"back":true}')"#)
        try other.execute("DELETE FROM quotes WHERE id = 'q1'")
        #expect(try Self.outbox(replica) == ["q1 3 1 g3"])
        let change = try #require(try replica.queuedLocalChanges(of: "quotes").first)
        #expect(change.operation == .delete)
        #expect(change.baseVersion == "1")
    }

    @Test(arguments: [
        (#"INSERT INTO quotes(body) VALUES ('not json')"#, "body must be a JSON object"),
        (#"INSERT INTO quotes(body) VALUES ('[1,2]')"#, "body must be a JSON object"),
        (#"INSERT INTO quotes(id, version, body) VALUES ('x', '7', '{}')"#, "version, fields and deleted are Ferry's"),
        (#"UPDATE quotes SET body = '{' WHERE id = 'q0'"#, "body must be a JSON object"),
        ("UPDATE quotes SET id = 'other' WHERE id = 'q0'", "id is the remote's and cannot change"),
        ("UPDATE quotes SET version = '9' WHERE id = 'q0'", "only body can be changed"),
    ])
    func aWriteTheRemoteCouldNotTakeIsRefusedAtOnce(_ sql: String, _ reason: String) throws {
        let directory = try TemporaryDirectory()
        let replica = try Self.seeded(in: directory)
        defer { replica.close() }
        let before = try replica.rows(of: "quotes")
        let other = try Self.client(directory)
        defer { other.close() }
        let error = #expect(throws: SQLiteError.self) { try other.execute(sql) }
        #expect(error?.message.contains(#"ferry: store "quotes": "#) == true, "\(String(describing: error))")
        #expect(error?.message.contains(reason) == true, "\(String(describing: error))")
        #expect(try replica.rows(of: "quotes") == before)
        #expect(try Self.outbox(replica).isEmpty)
    }

    @Test func aVCardWithoutUIDIsRefused() throws {
        let directory = try TemporaryDirectory()
        let replica = try ReplicaDatabase(path: directory.path("replica.db"))
        defer { replica.close() }
        try replica.prepare(StoreDefinition(name: "cards", writeBack: WriteBackConfiguration(push: true), localBody: .vcard))
        let other = try SQLiteConnection(path: directory.path("replica.db"), mode: .readWrite)
        defer { other.close() }
        let error = #expect(throws: SQLiteError.self) { try other.execute("INSERT INTO cards(body) VALUES ('BEGIN:VCARD\r\nVERSION:3.0\r\nFN:No Uid\r\nEND:VCARD\r\n')") }
        #expect(error?.message.contains("with a UID line") == true)
        try other.execute("INSERT INTO cards(body) VALUES ('begin:vcard\r\nVERSION:3.0\r\nuid;VALUE=text:abc\r\nFN:Has Uid\r\nEND:VCARD\r\n')")
        #expect(try replica.connection.scalarInt("SELECT count(*) FROM ferry_outbox") == 1)
        // An empty or blank UID is no UID: refused when written, not at the push.
        for empty in ["UID:", "UID: ", "UID;VALUE=text:", "uid:\t"] {
            let card = "BEGIN:VCARD\r\nVERSION:3.0\r\n\(empty)\r\nFN:Empty Uid\r\nEND:VCARD\r\n"
            let refused = #expect(throws: SQLiteError.self, "\(empty.debugDescription)") { try other.execute("INSERT INTO cards(body) VALUES (\(literal(card)))") }
            #expect(refused?.message.contains("with a UID line that is not empty") == true)
        }
        try other.execute("INSERT INTO cards(body) VALUES ('BEGIN:VCARD\nVERSION:3.0\nUID:lf-only\nFN:LF\nEND:VCARD\n')")
        #expect(try replica.connection.scalarInt("SELECT count(*) FROM ferry_outbox") == 2)
    }

    @Test func ferrysOwnMergesQueueNothing() throws {
        let directory = try TemporaryDirectory()
        let replica = try Self.seeded(in: directory)
        defer { replica.close() }
        _ = try replica.apply(ChangeBatch(changes: [record("q0", version: "2", "changed"), .delete(id: "q1"), record("q9", version: "1")], cursor: "c2"), to: "quotes")
        #expect(try Self.outbox(replica).isEmpty)
    }

    @Test func turningPushOnRebuildsAnOlderTableKeepingRowsAndColumns_andOffRefusesAgain() throws {
        let directory = try TemporaryDirectory()
        let replica = try ReplicaDatabase(path: directory.path("replica.db"))
        defer { replica.close() }
        let column = TypedColumn(name: "value", type: .text, path: "$.value")
        // A table as releases before write-back made it: no defaults.
        try replica.connection.execute("""
            CREATE TABLE quotes(id TEXT PRIMARY KEY NOT NULL, version TEXT NOT NULL, body TEXT NOT NULL, fields TEXT,
                                first_seen REAL NOT NULL, last_synced REAL NOT NULL, deleted INTEGER NOT NULL DEFAULT 0);
            CREATE VIEW my_view AS SELECT id FROM quotes;
            """)
        try replica.prepare(StoreDefinition(name: "quotes", columns: [column]))
        _ = try replica.apply(ChangeBatch(changes: [record("q0", version: "1", "kept")], cursor: "c"), to: "quotes")
        try replica.prepare(StoreDefinition(name: "quotes", columns: [column], writeBack: WriteBackConfiguration(push: true)))
        #expect(try replica.rows(of: "quotes") == ["q0": "1"])
        #expect(try replica.connection.scalarText("SELECT value FROM quotes WHERE id = 'q0'") == "kept")
        #expect(try replica.connection.scalarInt("SELECT count(*) FROM my_view") == 1, "a view of the user's survives the rebuild")
        let other = try Self.client(directory)
        defer { other.close() }
        try other.execute(#"INSERT INTO quotes(body) VALUES ('{"value":"new"}')"#)
        #expect(try replica.connection.scalarInt("SELECT count(*) FROM quotes WHERE value = 'new'") == 1)
        try replica.prepare(StoreDefinition(name: "quotes", columns: [column]))
        let error = #expect(throws: SQLiteError.self) { try other.execute("DELETE FROM quotes") }
        #expect(error?.message.contains("is read-only") == true)
    }

    @Test func aLocalWriteSurvivesAKilledWriter_itIsCommittedWithTheRow() throws {
        let directory = try TemporaryDirectory()
        let replica = try Self.seeded(in: directory)
        replica.close()
        // A client's transaction that is rolled back leaves neither the row nor the entry.
        let other = try Self.client(directory)
        try other.execute(#"BEGIN; UPDATE quotes SET body = '{"rolled":"back"}' WHERE id = 'q0'; ROLLBACK"#)
        try other.execute(#"UPDATE quotes SET body = '{"kept":1}' WHERE id = 'q1'"#)
        other.close()
        let reopened = try ReplicaDatabase(path: directory.path("replica.db"))
        defer { reopened.close() }
        try reopened.prepare(Self.pushing)
        #expect(try Self.outbox(reopened) == ["q1 2 1 g1"])
    }
}
