import Foundation
import Logging
import Testing
@testable import FerryKit
import FerryTestSupport

/// A pass that reads a whole JSON collection again skips the records of pages whose bytes are
/// those it merged last time, and reads every record of a page that changed; a sweep lists the
/// ids of unchanged pages without merging their records; first syncs and stores that push read
/// every record.
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
            let ids = versions.keys.sorted()
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

        // The next ferry sync sweeps (none was done yet): it lists every id, and merges no
        // record of a page that did not change.
        let sweep = try collection.sync(store)
        #expect(sweep.reconciliation == .swept(deleted: 0) && sweep.pagesUnchanged == 5)

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

    @Test func aSweepListsUnchangedPagesWithoutMergingThem_andSweepsWhatAChangedPageLost() throws {
        var collection = try Collection()
        let store = try collection.store()
        _ = try collection.sync(store)
        let synced = try collection.query("SELECT id, last_synced FROM items ORDER BY id")
        // Nothing changed: the sweep lists every id from pages it does not merge, deletes
        // nothing and writes no row.
        let swept = try collection.sync(store, sweep: true)
        #expect(swept.reconciliation == .swept(deleted: 0) && swept.counts == MergeCounts(unchanged: 20) && swept.pagesUnchanged == 5)
        #expect(try collection.query("SELECT id, last_synced FROM items ORDER BY id") == synced)
        #expect(try collection.digests().count == 5)

        // Record 6 goes: page 2 and every page after it change (the records move up one), so
        // they are merged; page 1 is still listed from its digest, and only r6 is swept.
        collection.versions[6] = nil
        try collection.write()
        let after = try collection.sync(store, sweep: true)
        #expect(after.reconciliation == .swept(deleted: 1) && after.pagesUnchanged == 1)
        #expect(try collection.query("SELECT count(*) FROM items") == ["19"])
        #expect(try collection.query("SELECT count(*) FROM items WHERE id = 'r6'") == ["0"])

        // A store that pushes keeps no digests.
        let pushing = try Collection()
        let pushStore = try pushing.store(["push": "yes", "push-update": "PUT {url}/{id}"])
        _ = try pushing.sync(pushStore)
        #expect(try pushing.sync(pushStore).pagesUnchanged == 0)
        #expect(try pushing.digests().isEmpty)
    }

    /// A sweep that trusted digests checks that every listed record has a row: a row removed
    /// behind Ferry's back (its guards dropped) is reported, not papered over, and the next
    /// pass reads every record again and brings it back.
    @Test func aSweepFindsRowsRemovedBehindFerrysBack_andThePassAfterBringsThemBack() throws {
        let collection = try Collection()
        let store = try collection.store()
        _ = try collection.sync(store)
        _ = try collection.sync(store, sweep: true)
        let triggers = try collection.query("SELECT name FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = 'items'")
        #expect(!triggers.isEmpty)
        _ = try collection.query(triggers.map { "DROP TRIGGER \"\($0)\";" }.joined() + "DELETE FROM items WHERE id IN ('r3', 'r11');")

        let swept = try collection.sync(store, sweep: true)
        #expect(swept.pagesUnchanged == 5)
        #expect(swept.gaps == [.listedRecordsMissing(count: 2)])
        #expect(!swept.isComplete)
        #expect(try collection.digests().isEmpty, "the digests that vouched for the lost rows are forgotten")
        #expect(try collection.query("SELECT incomplete IS NOT NULL FROM ferry_sync_state WHERE store = 'items'") == ["1"])

        // The next pass sweeps (the gap asks for it) and reads every record.
        let repaired = try collection.sync(store)
        #expect(repaired.counts.inserted == 2 && repaired.pagesUnchanged == 0 && repaired.isComplete)
        #expect(try collection.query("SELECT count(*) FROM items") == ["20"])
        #expect(try collection.query("SELECT incomplete IS NULL FROM ferry_sync_state WHERE store = 'items'") == ["1"])
    }

    @Test func aPageWithARecordThatCannotBeStored_isReadAgainEachPass() throws {
        let collection = try Collection()
        try #"{"next":"page2.json","results":[{"id":"r1","v":1},{"v":1,"title":"no id"},{"id":"r3","v":1},{"id":"r4","v":1}]}"#
            .write(toFile: collection.directory.path("page1.json"), atomically: true, encoding: .utf8)
        let store = try collection.store()
        let first = try collection.sync(store)
        #expect(first.counts.skipped == 1)
        #expect(try collection.digests() == ["2", "3", "4", "5"])
        // The page is read again at every pass (this kind cannot fetch by id), the sweep of
        // the second pass included; the other pages are skipped.
        let again = try collection.sync(store)
        #expect(again.counts.skipped == 1 && again.pagesUnchanged == 4)
        let third = try collection.sync(store)
        #expect(third.counts.skipped == 1 && third.pagesUnchanged == 4)
    }
}
