import Foundation
import Logging
import Testing
@testable import FerryKit
import FerryTestSupport

/// An `updated-param` store's high-water mark survives its sweeps: a sweep whose pages are all
/// unchanged, or one that fails halfway, leaves the mark where it was, so the next pass is
/// still incremental (asks `since=` the mark) instead of listing everything for ever.
@Suite("The high-water mark and sweeps", .serialized)
struct HighWaterMarkTests {
    @Test func sweepsNeverEraseOrLowerTheMark() throws {
        let server = try TestServer.python("json_pages_server.py", arguments: ["--count", "30"])
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        var store = try configuredStore(kind: "json", url: server.baseURL + "/items", [
            "pagination": "link", "page-size-param": "per_page", "page-size": "10", "updated-param": "since", "version-field": "updated_at",
        ])
        store.reconcileInterval = .zero
        let configuration = FerryConfiguration(global: GlobalConfiguration(databasePath: directory.path("replica.db"), runtimeDirectory: directory.path("run")),
                                               stores: [store])
        func sync() throws -> PassReport {
            let sync = try OneShotSync(configuration: configuration, storeNames: [], logger: Logger(label: "test"))
            return try #require(try sync.run(refresh: .milliseconds(50)) { _ in }.first?.result.get())
        }
        func mark() throws -> String? {
            let cursor = try Shell.sqlite(directory.path("replica.db"), "SELECT cursor FROM ferry_sync_state WHERE store = 'items'").first
            return cursor.flatMap { JSONCollectionCursor(stored: $0) }?.highWater
        }
        _ = try sync()
        let first = try #require(try mark(), "the first sync stores a mark")
        // Every later pass is a due sweep; its pages are all unchanged.
        let sweep = try sync()
        #expect(sweep.reconciliation == .swept(deleted: 0), "\(sweep.summary)")
        #expect(try mark() == first, "a sweep of unchanged pages keeps the mark")
        // A change: the next pass's mark moves on, never back.
        _ = try server.control("/admin/update", method: "POST", body: #"{"ids":[4]}"#)
        _ = try sync()
        let moved = try #require(try mark())
        #expect(JSONCollectionCursor.isNewer(moved, than: first), "\(moved) after \(first)")
        _ = try sync()
        #expect(try mark() == moved)
    }
}

/// An API restored from a backup answers older versions than the replica holds: an incremental
/// pass rightly keeps the newer rows (a stale page must not overwrite them), and `ferry resync`
/// makes the replica what the remote holds now, whatever the version order says.
@Suite("A rebuild writes what differs")
struct RebuildVersionTests {
    @Test func aVersionThatWentBackIsWrittenByARebuild() throws {
        var collection = try PageDigestTests.Collection()
        for id in 1...20 { collection.versions[id] = 5 }
        try collection.write()
        let store = try collection.store()
        _ = try collection.sync(store)
        // Restored from a backup: record 3 is back at version 2, with the text it had then.
        collection.versions[3] = 2
        try collection.write()
        let incremental = try collection.sync(store, sweep: true)
        #expect(incremental.counts.updated == 0, "an older version does not overwrite a pass's rows: \(incremental.summary)")
        let configuration = FerryConfiguration(global: GlobalConfiguration(databasePath: collection.database, runtimeDirectory: collection.directory.path("run")),
                                               stores: [store])
        let sync = try OneShotSync(configuration: configuration, storeNames: [], logger: Logger(label: "test"))
        sync.resync = true
        let rebuilt = try #require(try sync.run(refresh: .milliseconds(50)) { _ in }.first?.result.get())
        #expect(rebuilt.counts.updated == 1, "\(rebuilt.summary)")
        #expect(try collection.query("SELECT version, json_extract(body, '$.title') FROM items WHERE id = 'r3'") == ["2|record 3 v2"])
    }
}
