import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// A due sweep whose pages are all as the last clean sweep (or first sync) listed them, with no
/// row inserted or deleted since, counts them instead of listing their ids and deletes
/// nothing; a page that changed, a row that came or went since, or a sweep a person asked for
/// makes it list every id, the counted pages read again.
@Suite(.serialized) struct SweptListingTests {
    typealias Collection = PageDigestTests.Collection

    /// The store with every pass a due sweep (`reconcile-interval` of zero).
    func sweepingStore(_ collection: Collection) throws -> StoreConfiguration {
        var store = try collection.store()
        store.reconcileInterval = .zero
        return store
    }

    func sweptListing(_ collection: Collection) throws -> String {
        try collection.query("SELECT coalesce(swept_listing, 'none') FROM ferry_sync_state WHERE store = 'items'").first ?? "?"
    }

    @Test func aDueSweepOfUnchangedPages_countsThem_andDeletesNothing() throws {
        let collection = try Collection()
        let store = try sweepingStore(collection)
        let first = try collection.sync(store)
        #expect(first.counts.inserted == 20 && first.reconciliation == nil)
        // The first sync read every page into an empty table: its rows are its listing.
        let listing = try sweptListing(collection)
        #expect(listing != "none")

        for _ in 1...2 {
            let sweep = try collection.sync(store)
            #expect(sweep.reconciliation == .swept(deleted: 0) && sweep.listingUnchanged)
            #expect(sweep.requests == 5 && sweep.pagesUnchanged == 5 && sweep.isComplete)
            #expect(try sweptListing(collection) == listing)
        }

        // `ferry sync --sweep` lists every id whatever the pages say.
        let asked = try collection.sync(store, sweep: true)
        #expect(asked.reconciliation == .swept(deleted: 0) && !asked.listingUnchanged && asked.requests == 5)
    }

    @Test func aSweepAfterAPageChanged_listsEveryID_readingTheCountedPagesAgain() throws {
        var collection = try Collection()
        let store = try sweepingStore(collection)
        _ = try collection.sync(store)

        // r14 goes: pages 4 and 5 change (their records move up one), pages 1 to 3 do not.
        // The sweep counts pages 1 to 3, finds page 4 changed, lists the rest and then reads
        // pages 1 to 3 again for their ids: eight requests, and only r14 is deleted.
        collection.versions[14] = nil
        try collection.write()
        let sweep = try collection.sync(store)
        #expect(sweep.reconciliation == .swept(deleted: 1) && !sweep.listingUnchanged)
        #expect(sweep.requests == 8 && sweep.isComplete)
        #expect(try collection.query("SELECT count(*) FROM items WHERE deleted = 0") == ["19"])
        #expect(try collection.query("SELECT count(*) FROM items WHERE id = 'r14'") == ["0"])
        #expect(try collection.digests() == ["1", "2", "3", "4", "5"])

        // That clean sweep's listing is the new one: the next sweep counts every page.
        let next = try collection.sync(store)
        #expect(next.reconciliation == .swept(deleted: 0) && next.listingUnchanged && next.requests == 5)
    }

    /// The case the rows' side of the condition is for: the pages come back to the very bytes
    /// the last sweep listed, but a pass between sweeps stored a record that has gone since.
    @Test func aRowStoredSinceTheLastSweep_makesTheSweepListEveryID_evenWhenThePagesAreBack() throws {
        var collection = try Collection()
        let sweeping = try sweepingStore(collection)
        var between = try collection.store()
        between.reconcileInterval = nil
        _ = try collection.sync(sweeping)
        let listing = try sweptListing(collection)

        collection.versions[21] = 1
        try collection.write()
        let added = try collection.sync(between)
        #expect(added.counts.inserted == 1 && added.reconciliation == nil)
        #expect(try sweptListing(collection) == "none", "a stored row forgets the listing")

        collection.versions[21] = nil
        try collection.write()
        try FileManager.default.removeItem(atPath: collection.directory.path("page6.json"))
        // Pages 1 to 5 are byte for byte those of the first sync, yet r21 must go.
        let sweep = try collection.sync(sweeping)
        #expect(sweep.reconciliation == .swept(deleted: 1) && !sweep.listingUnchanged)
        #expect(try collection.query("SELECT count(*) FROM items WHERE id = 'r21'") == ["0"])
        #expect(try sweptListing(collection) == listing)
    }

    @Test func aSweepThatCouldNotStoreARecord_leavesNoListingToTrust() throws {
        let collection = try Collection()
        try #"{"next":"page2.json","results":[{"id":"r1","v":1},{"v":1,"title":"no id"},{"id":"r3","v":1},{"id":"r4","v":1}]}"#
            .write(toFile: collection.directory.path("page1.json"), atomically: true, encoding: .utf8)
        let store = try sweepingStore(collection)
        let first = try collection.sync(store)
        #expect(first.counts.skipped == 1 && !first.isComplete)
        #expect(try sweptListing(collection) == "none")
        let sweep = try collection.sync(store)
        #expect(sweep.reconciliation == .swept(deleted: 0) && !sweep.listingUnchanged && !sweep.isComplete)
        #expect(try sweptListing(collection) == "none")
    }

    @Test func theListingDigest_coversEveryPageInOrder() {
        #expect(PageDigest.listing([:]) == nil)
        #expect(PageDigest.listing([1: 7, 3: 9]) == nil, "page 2 has no digest")
        #expect(PageDigest.listing([2: 7]) == nil, "the chain starts at page 1")
        let listing = PageDigest.listing([1: 7, 2: 9])
        #expect(listing != nil)
        #expect(listing != PageDigest.listing([1: 9, 2: 7]))
        #expect(listing != PageDigest.listing([1: 7, 2: 9, 3: 0]))
        #expect(listing == PageDigest.listing([2: 9, 1: 7]))
    }
}

extension SweptListingTests {
    /// A listing that names no id at all still sweeps: every live row is gone from the remote,
    /// and `max-delete-share` decides, as for any sweep.
    @Test func aCompleteListingOfNoRecords_sweepsOrRefuses_neverSaysOK() throws {
        var collection = try Collection()
        let store = try sweepingStore(collection)
        _ = try collection.sync(store)
        collection.versions = [:]
        try collection.write()
        try #"{"next":null,"results":[]}"#.write(toFile: collection.directory.path("page1.json"), atomically: true, encoding: .utf8)
        let refused = try collection.sync(store)
        #expect(refused.reconciliation == .refused(wouldDelete: 20, of: 20) && !refused.isComplete)
        var allowing = store
        allowing.maxDeleteShare = 1
        let swept = try collection.sync(allowing)
        #expect(swept.reconciliation == .swept(deleted: 20) && swept.isComplete)
        #expect(try collection.query("SELECT count(*) FROM items") == ["0"])
    }
}
