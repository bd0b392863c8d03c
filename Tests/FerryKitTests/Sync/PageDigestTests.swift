import Foundation
import Logging
import Testing
@testable import FerryKit
import FerryTestSupport

/// A pass that reads a whole JSON collection again skips the records of pages whose bytes are
/// those it merged last time, and reads every record of a page that changed; sweeps, first
/// syncs and stores that push read every record.
@Suite(.serialized) struct PageDigestTests {
    /// Five pages of four records chained by `next`, as files.
    struct Collection {
        let directory: TemporaryDirectory
        var database: String { directory.path("replica.db") }
        var versions: [Int: Int] = [:]

        init() throws {
            directory = try TemporaryDirectory()
            for id in 1...20 { versions[id] = 1 }
            try write()
        }

        func write() throws {
            let ids = (1...20).filter { versions[$0] != nil }
            let pages = stride(from: 0, to: ids.count, by: 4).map { Array(ids[$0..<min($0 + 4, ids.count)]) }
            for (index, page) in pages.enumerated() {
                let records = page.map { #"{"id":"r\#($0)","v":\#(versions[$0]!),"title":"record \#($0) v\#(versions[$0]!)"}"# }
                let next = index + 1 < pages.count ? #""page\#(index + 2).json""# : "null"
                try #"{"next":\#(next),"results":[\#(records.joined(separator: ","))]}"#
                    .write(toFile: directory.path("page\(index + 1).json"), atomically: true, encoding: .utf8)
            }
        }

        func store(_ keys: [String: String] = [:]) throws -> StoreConfiguration {
            try configuredStore(kind: "json", url: "file:" + directory.path("page1.json"), [
                "records-path": "results", "id-field": "id", "version-field": "v", "pagination": "next-url:next",
            ].merging(keys) { $1 })
        }

        func sync(_ store: StoreConfiguration, sweep: Bool = false) throws -> PassReport {
            let configuration = FerryConfiguration(global: GlobalConfiguration(databasePath: database, runtimeDirectory: directory.path("run")),
                                                   stores: [store])
            let sync = try OneShotSync(configuration: configuration, storeNames: [], logger: Logger(label: "test"))
            sync.sweepNow = sweep
            return try #require(try sync.run(refresh: .milliseconds(50)) { _ in }.first?.result.get())
        }

        func digests() throws -> [String] {
            try Shell.sqlite(database, "SELECT page FROM ferry_page_digests ORDER BY page")
        }

        func query(_ sql: String) throws -> [String] { try Shell.sqlite(database, sql) }
    }

    @Test func unchangedPagesAreSkipped_changedPagesReadRecordByRecord() throws {
        var collection = try Collection()
        let store = try collection.store()
        let first = try collection.sync(store)
        #expect(first.counts.inserted == 20)
        #expect(try collection.digests() == ["1", "2", "3", "4", "5"])
        let synced = try collection.query("SELECT id, last_synced FROM items ORDER BY id")

        // The next ferry sync sweeps (none was done yet): it reads every record.
        let sweep = try collection.sync(store)
        #expect(sweep.reconciliation == .swept(deleted: 0) && sweep.pagesUnchanged == 0)

        // Nothing changed: every page skipped, no row written.
        let again = try collection.sync(store)
        #expect(again.counts == MergeCounts(unchanged: 20) && again.isComplete && again.pagesUnchanged == 5)
        #expect(try collection.query("SELECT id, last_synced FROM items ORDER BY id") == synced)

        // Record 10 (page 3) changes: page 3's records are merged, the others skipped.
        collection.versions[10] = 2
        try collection.write()
        let changed = try collection.sync(store)
        #expect(changed.counts.updated == 1 && changed.counts.unchanged == 19 && changed.pagesUnchanged == 4)
        #expect(try collection.query("SELECT json_extract(body, '$.title') FROM items WHERE id = 'r10'") == ["record 10 v2"])

        // The last page goes and a sweep deletes its records; when the page comes back with
        // the very bytes it had, its records are read again (its digest went with the chain's
        // end), not skipped as merged.
        for id in 17...20 { collection.versions[id] = nil }
        try collection.write()
        try FileManager.default.removeItem(atPath: collection.directory.path("page5.json"))
        let swept = try collection.sync(store, sweep: true)
        #expect(swept.reconciliation == .swept(deleted: 4))
        #expect(try collection.digests() == ["1", "2", "3", "4"])
        for id in 17...20 { collection.versions[id] = 1 }
        try collection.write()
        let back = try collection.sync(store)
        // Pages 1 to 3 are as they were; page 4 now links to page 5.
        #expect(back.counts.inserted == 4 && back.counts.unchanged == 16 && back.pagesUnchanged == 3)
        #expect(try collection.query("SELECT count(*) FROM items") == ["20"])
    }

    @Test func sweepsAndPushingStoresReadEveryRecord() throws {
        let collection = try Collection()
        let store = try collection.store()
        _ = try collection.sync(store)
        // A sweep lists every id: it reads every record, and stores the digests anew.
        let swept = try collection.sync(store, sweep: true)
        #expect(swept.reconciliation == .swept(deleted: 0) && swept.counts.unchanged == 20 && swept.pagesUnchanged == 0)
        #expect(try collection.digests().count == 5)

        // A store that pushes keeps no digests.
        let pushing = try Collection()
        let pushStore = try pushing.store(["push": "yes", "push-update": "PUT {url}/{id}"])
        _ = try pushing.sync(pushStore)
        #expect(try pushing.sync(pushStore).pagesUnchanged == 0)
        #expect(try pushing.digests().isEmpty)
    }

    @Test func aPageWithARecordThatCannotBeStored_isReadAgainEachPass() throws {
        let collection = try Collection()
        try #"{"next":"page2.json","results":[{"id":"r1","v":1},{"v":1,"title":"no id"},{"id":"r3","v":1},{"id":"r4","v":1}]}"#
            .write(toFile: collection.directory.path("page1.json"), atomically: true, encoding: .utf8)
        let store = try collection.store()
        let first = try collection.sync(store)
        #expect(first.counts.skipped == 1)
        #expect(try collection.digests() == ["2", "3", "4", "5"])
        // The record is fetched again by reading everything (this kind cannot fetch by id).
        let again = try collection.sync(store)
        #expect(again.counts.skipped == 1 && again.pagesUnchanged == 0)
    }
}
