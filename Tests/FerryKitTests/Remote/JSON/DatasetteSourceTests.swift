import Foundation
import Logging
import Testing
@testable import FerryKit
import FerryTestSupport

/// JSONCollectionSource against Datasette (pip, $FERRY_VENV) serving a SQLite file that the test
/// changes while it serves. Skipped when Datasette is not installed, a failure when CI=true.
@Suite(.serialized) struct DatasetteSourceTests {
    static let datasette = TestTools.executable("datasette") ?? "datasette (not found in $FERRY_VENV/bin or PATH)"

    @discardableResult
    static func python(_ code: String, _ arguments: [String] = []) throws -> String {
        String(decoding: try Shell.run("/usr/bin/env", ["python3", "-c", code] + arguments), as: UTF8.self)
    }

    @Test func fullThenIncrementalWhileServing() throws {
        guard FileManager.default.isExecutableFile(atPath: Self.datasette) else {
            if isCI { Issue.record("datasette is not installed at \(Self.datasette)") }
            return
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-datasette-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = directory.appendingPathComponent("items.db").path
        try Self.python("""
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            db.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, updated_at TEXT)")
            db.executemany("INSERT INTO items VALUES (?,?,?)", [(i, "item %d" % i, "2024-01-01 00:00:%06d" % i) for i in range(1, 301)])
            db.commit()
            """, [database])
        let port = Int(try Self.python("import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])")
            .trimmingCharacters(in: .whitespacesAndNewlines))!
        let server = try TestServer.command("'\(Self.datasette)' serve '\(database)' --host 127.0.0.1 --port \(port) --setting default_page_size 50", port: port)
        var ready = false
        for _ in 0..<150 where !ready {
            ready = (try? server.control("/-/versions.json")).map { !$0.isEmpty } ?? false
            if !ready { Thread.sleep(forTimeInterval: 0.2) }
        }
        guard ready else {
            if isCI { Issue.record("datasette did not answer on port \(port)") }
            return
        }
        let store = try configuredStore(kind: "json", url: server.baseURL + "/items/items.json?_shape=objects&_sort=updated_at", [
            "records-path": "rows", "pagination": "next-url:next_url", "updated-param": "updated_at__gt", "page-size-param": "_size",
            "page-size": "70",
        ])
        func sync(_ cursor: String?) throws -> CollectedPass {
            try SourceRun(store: store, plan: PassPlan(cursor: cursor, reconcile: false)).runToCompletion()
        }
        let first = try sync(nil)
        #expect(first.error == nil)
        #expect(first.records.map(\.id) == (1...300).map(String.init))
        // Pages are gathered into batches; sorted by the version, every batch commits a cursor.
        #expect(first.batches.allSatisfy { $0.cursor != nil })
        try Self.python("""
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            db.execute("UPDATE items SET name = 'changed', updated_at = '2024-02-01 00:00:000001' WHERE id IN (5, 150)")
            db.execute("INSERT INTO items VALUES (301, 'new', '2024-02-01 00:00:000002')")
            db.commit()
            """, [database])
        let second = try sync(first.finalCursor)
        #expect(second.error == nil)
        #expect(second.records.map(\.id) == ["5", "150", "301"])
        let body = try JSONSerialization.jsonObject(with: second.records[0].body) as? [String: Any]
        #expect(body?["name"] as? String == "changed")
        let third = try sync(second.finalCursor)
        #expect(third.records.isEmpty)
    }
}
