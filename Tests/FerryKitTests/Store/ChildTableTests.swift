import Foundation
import Logging
import Testing
@testable import FerryKit
import FerryTestSupport

/// `table.NAME = PATH`: a record's nested array as rows of a view `STORE__NAME` (parent id,
/// position, element, typed columns), always what the parent holds after each pass, never
/// writable.
@Suite("Nested records as child tables", .serialized)
struct ChildTableTests {
    struct Replica {
        let directory: TemporaryDirectory
        var database: String { directory.path("replica.db") }

        init() throws { directory = try TemporaryDirectory() }

        /// The orders the file: page serves, then one pass.
        func sync(_ orders: [[String: Any]], extra: String = "") throws -> PassReport {
            let page = try JSONSerialization.data(withJSONObject: ["items": orders, "next": NSNull()])
            try page.write(to: URL(fileURLWithPath: directory.path("orders.json")))
            try """
                [ferry]
                database = \(database)
                [store orders]
                kind = json
                url = file:\(directory.path("orders.json"))
                pagination = next-url:next
                records-path = items
                reconcile-interval = 1s
                table.lines = $.lines.data[*]
                table.lines.sku = text $.sku
                table.lines.qty = integer $.qty
                table.labels = $.labels
                \(extra)
                """.write(toFile: directory.path("ferry.conf"), atomically: true, encoding: .utf8)
            let configuration = try ConfigurationLoader.load(path: directory.path("ferry.conf"), environment: [:])
            let sync = try OneShotSync(configuration: configuration, storeNames: [], logger: Logger(label: "test"))
            return try #require(try sync.run(refresh: .milliseconds(50)) { _ in }.first?.result.get())
        }

        func rows(_ sql: String) throws -> [String] { try Shell.sqlite(database, sql) }
    }

    static func order(_ id: Int, version: String, lines: [(String, Int)], labels: [String] = []) -> [String: Any] {
        ["id": id, "updated_at": version, "lines": ["data": lines.map { ["sku": $0.0, "qty": $0.1] }], "labels": labels]
    }

    @Test func eachElementIsARowWithItsParentItsPositionAndTypedColumns() throws {
        let replica = try Replica()
        _ = try replica.sync([Self.order(1, version: "1", lines: [("a", 2), ("b", 1)], labels: ["red", "big"]),
                              Self.order(2, version: "1", lines: [("a", 5)])])
        #expect(try replica.rows("SELECT parent_id, position, sku, qty FROM orders__lines ORDER BY parent_id, position") == ["1|0|a|2", "1|1|b|1", "2|0|a|5"])
        #expect(try replica.rows("SELECT sum(qty) FROM orders__lines WHERE sku = 'a'") == ["7"])
        #expect(try replica.rows("SELECT typeof(qty) FROM orders__lines LIMIT 1") == ["integer"])
        #expect(try replica.rows("SELECT element FROM orders__labels WHERE parent_id = '1' ORDER BY position") == ["red", "big"])
        // A join a reader writes: orders with their lines.
        #expect(try replica.rows("SELECT o.id, count(l.position) FROM orders o JOIN orders__lines l ON l.parent_id = o.id GROUP BY o.id ORDER BY o.id") == ["1|2", "2|1"])
    }

    @Test func theRowsFollowTheParent_updatedOrDeleted() throws {
        let replica = try Replica()
        _ = try replica.sync([Self.order(1, version: "1", lines: [("a", 2), ("b", 1)]), Self.order(2, version: "1", lines: [("c", 3)])])
        // Order 1 loses a line and changes another; order 2 is deleted (the sweep finds it gone).
        let after = try replica.sync([Self.order(1, version: "2", lines: [("b", 9)])])
        #expect(after.counts.updated == 1 && after.counts.deleted == 1, "\(after.summary)")
        #expect(try replica.rows("SELECT parent_id, position, sku, qty FROM orders__lines") == ["1|0|b|9"])
    }

    @Test func aWriteToAChildTableIsRefusedNamingTheParent() throws {
        let replica = try Replica()
        _ = try replica.sync([Self.order(1, version: "1", lines: [("a", 2)])], extra: "push = yes\npush-update = PATCH {url}/{id}")
        for statement in ["INSERT INTO orders__lines(parent_id, position, element) VALUES ('1', 5, '{}')",
                          "UPDATE orders__lines SET qty = 3", "DELETE FROM orders__lines"] {
            let outcome = try Shell.outcome("/usr/bin/sqlite3", [replica.database, statement])
            #expect(outcome.status != 0, "\(statement)")
            #expect(outcome.errors.contains("orders__lines is a view of orders's $.lines.data arrays: write the parent record in orders instead"), "\(outcome.errors)")
        }
        #expect(try replica.rows("SELECT count(*) FROM orders__lines") == ["1"])
    }

    @Test func aTableNoLongerConfiguredIsDropped_andAChangedOneRemade() throws {
        let replica = try Replica()
        _ = try replica.sync([Self.order(1, version: "1", lines: [("a", 2)], labels: ["x"])])
        let configuration = replica.directory.path("ferry.conf")
        var text = try String(contentsOfFile: configuration, encoding: .utf8)
        text = text.replacingOccurrences(of: "table.labels = $.labels\n", with: "").replacingOccurrences(of: "table.lines.qty = integer $.qty", with: "table.lines.qty = real $.qty")
        try text.write(toFile: configuration, atomically: true, encoding: .utf8)
        let loaded = try ConfigurationLoader.load(path: configuration, environment: [:])
        let sync = try OneShotSync(configuration: loaded, storeNames: [], logger: Logger(label: "test"))
        _ = try #require(try sync.run(refresh: .milliseconds(50)) { _ in }.first?.result.get())
        #expect(try replica.rows("SELECT name FROM sqlite_schema WHERE type = 'view' AND name LIKE 'orders%' ORDER BY name") == ["orders__lines"])
        #expect(try replica.rows("SELECT typeof(qty) FROM orders__lines") == ["real"])
    }

    @Test(arguments: [
        ("[store c]\nkind = carddav\nurl = https://dav.example.com/c/\ntable.x = $.x", "table.x", "not JSON objects"),
        ("[store j]\nkind = json\nurl = https://api.example.com/j\ntable.x = lines", "table.x", "not a JSON path to an array"),
        ("[store j]\nkind = json\nurl = https://api.example.com/j\ntable.x.sku = text $.sku", "table.x.sku", "no table.x"),
        ("[store j]\nkind = json\nurl = https://api.example.com/j\ntable.x = $.x\ntable.x.position = text $.p", "table.x.position", "every child table has"),
        ("[store j]\nkind = json\nurl = https://api.example.com/j\ntable.x = $.x\n[store j__x]\nkind = json\nurl = https://api.example.com/k", "table.x", "name of store j__x"),
    ])
    func aWrongChildTableIsRefusedAtLoad(_ text: String, _ key: String, _ words: String) {
        do {
            _ = try ConfigurationLoader.parse(text: text, file: "/test/ferry.conf", environment: [:])
            Issue.record("accepted: \(text)")
        } catch {
            #expect(error.problems.contains { $0.key == key && $0.message.contains(words) }, "\(error)")
        }
    }
}
