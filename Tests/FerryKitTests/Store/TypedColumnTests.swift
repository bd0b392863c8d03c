import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

@Suite("Replica typed columns")
struct TypedColumnTests {
    static func person(_ id: String, email: String, age: Int, version: String = "1") -> RecordChange {
        .upsert(RemoteRecord(id: id, version: version, body: Data(#"{"id":"\#(id)","email":"\#(email)","age":\#(age),"address":{"city":"Oslo"}}"#.utf8)))
    }

    @Test func indexedColumnIsUsedByQueries() throws {
        let directory = try TemporaryDirectory()
        let replica = try ReplicaDatabase(path: directory.path("replica.db"))
        try replica.prepare(StoreDefinition(name: "people", columns: [
            TypedColumn(name: "email", type: .text, path: "$.email"),
            TypedColumn(name: "age", type: .integer, path: "$.age"),
            TypedColumn(name: "city", type: .text, path: "$.address.city", indexed: false),
        ]))
        _ = try replica.apply(ChangeBatch(changes: (0..<200).map { Self.person("p\($0)", email: "u\($0)@example.org", age: $0 % 90) }, cursor: nil), to: "people")

        // The plan's detail is column 3 ("SEARCH people USING INDEX people_email_idx (email=?)").
        let statement = try replica.connection.prepare("EXPLAIN QUERY PLAN SELECT id FROM people WHERE email = ?1")
        try statement.bind("u7@example.org", at: 1)
        var details: [String] = []
        while try statement.step() { details.append(statement.string(at: 3) ?? "") }
        #expect(details.contains { $0.contains("USING INDEX people_email_idx") }, "plan: \(details)")

        #expect(try replica.connection.scalarText("SELECT id FROM people WHERE email = 'u7@example.org'") == "p7")
        #expect(try replica.connection.scalarInt("SELECT count(*) FROM people WHERE age > 80") == 18)
        #expect(try replica.connection.scalarText("SELECT city FROM people WHERE id = 'p1'") == "Oslo")
        // An update moves the indexed value.
        _ = try replica.apply(ChangeBatch(changes: [Self.person("p7", email: "changed@example.org", age: 1, version: "2")], cursor: nil), to: "people")
        #expect(try replica.connection.scalarText("SELECT id FROM people WHERE email = 'changed@example.org'") == "p7")
        #expect(try replica.integrityCheck() == "ok")
    }

    /// The table goes with its columns and index; the next prepare makes all of them again.
    @Test func aTableDroppedBehindFerrysBackComesBackWithItsColumns() throws {
        let directory = try TemporaryDirectory()
        let replica = try ReplicaDatabase(path: directory.path("replica.db"))
        let definition = StoreDefinition(name: "people", columns: [TypedColumn(name: "email", type: .text, path: "$.email")])
        try replica.prepare(definition)
        _ = try replica.apply(ChangeBatch(changes: [Self.person("p1", email: "a@example.org", age: 3)], cursor: nil), to: "people")
        try replica.connection.execute("DROP TABLE people")
        try replica.prepare(definition)
        _ = try replica.apply(ChangeBatch(changes: [Self.person("p2", email: "b@example.org", age: 4)], cursor: nil), to: "people")
        #expect(try replica.connection.scalarText("SELECT id FROM people WHERE email = 'b@example.org'") == "p2")
        #expect(try replica.connection.scalarInt("SELECT count(*) FROM sqlite_schema WHERE name = 'people_email_idx'") == 1)
    }

    @Test func changedAndRemovedColumnsAreRebuilt() throws {
        let directory = try TemporaryDirectory()
        let replica = try ReplicaDatabase(path: directory.path("replica.db"))
        try replica.prepare(StoreDefinition(name: "people", columns: [TypedColumn(name: "contact", type: .text, path: "$.email")]))
        _ = try replica.apply(ChangeBatch(changes: [Self.person("p1", email: "a@x", age: 30)], cursor: nil), to: "people")
        // Same definition again: idempotent.
        try replica.prepare(StoreDefinition(name: "people", columns: [TypedColumn(name: "contact", type: .text, path: "$.email")]))
        #expect(try replica.connection.scalarText("SELECT contact FROM people") == "a@x")
        // Path changed: the column now projects the new path, still indexed.
        try replica.prepare(StoreDefinition(name: "people", columns: [TypedColumn(name: "contact", type: .text, path: "$.address.city")]))
        #expect(try replica.connection.scalarText("SELECT contact FROM people") == "Oslo")
        // Removed: the column and its index are gone; the data is not.
        try replica.prepare(StoreDefinition(name: "people"))
        let columns = try replica.connection.textRows("SELECT name FROM pragma_table_xinfo('people')")
        #expect(!columns.contains("contact"))
        #expect(try replica.connection.scalarInt("SELECT count(*) FROM sqlite_schema WHERE name = 'people_contact_idx'") == 0)
        #expect(try replica.recordCount(of: "people") == 1)
    }

    @Test func nonJSONBodyGivesNullNotAnError() throws {
        let directory = try TemporaryDirectory()
        let replica = try ReplicaDatabase(path: directory.path("replica.db"))
        try replica.prepare(StoreDefinition(name: "notes", columns: [TypedColumn(name: "title", type: .text, path: "$.title")]))
        let counts = try replica.apply(ChangeBatch(changes: [.upsert(RemoteRecord(id: "n", version: "1", body: Data("not json".utf8)))], cursor: nil), to: "notes")
        #expect(counts.inserted == 1)
        #expect(try replica.connection.scalarInt("SELECT count(*) FROM notes WHERE title IS NULL") == 1)
    }

    @Test func columnClashingWithBuiltInIsRejected() throws {
        let directory = try TemporaryDirectory()
        let replica = try ReplicaDatabase(path: directory.path("replica.db"))
        #expect(throws: StoreError.self) { try replica.prepare(StoreDefinition(name: "x", columns: [TypedColumn(name: "body", type: .text, path: "$.body")])) }
    }
}
