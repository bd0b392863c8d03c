import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// A Parse store with `where`: every read carries it (changes, the id listing of a sweep, the
/// fetch of pending ids), so the replica holds what it matches; an object that stops matching
/// is not listed by the next sweep, which removes it.
@Suite(.serialized) struct ParseFilterTests {
    func filtered(_ server: ParseTestServer, pageSize: Int = 4) -> StoreConfiguration {
        var store = server.store(pageSize: pageSize)
        var options = store.options.as(ParseOptions.self)!
        options.filter = #"{"n":{"$lt":10}}"#
        store.options = AnyStoreOptions(options)
        return store
    }

    /// The seeded objects' `n` is their order of creation, from 0.
    func ids(_ server: ParseTestServer, where predicate: (Int) -> Bool) throws -> Set<String> {
        Set(try server.dump().filter { predicate($0["n"] as? Int ?? -1) }.compactMap { $0["objectId"] as? String })
    }

    @Test func everyReadCarriesTheFilter() throws {
        let server = try ParseTestServer.start()
        try server.admin("seed", ["class": "Quote", "count": 40, "seed": 3])
        let store = filtered(server)
        let matching = try ids(server) { $0 < 10 }
        #expect(matching.count == 10)

        // Pages of 4, keyset-paged inside the filter.
        let first = try server.sync(store)
        #expect(first.error == nil)
        #expect(Set(first.records.map(\.id)) == matching)
        #expect(first.batches.first?.totalHint == 10)

        // An object edited so it no longer matches: the changes leave it out, and the sweep's
        // listing does not name it, so the replica lets it go.
        let leaving = try #require(matching.sorted().first)
        _ = try Shell.run("/usr/bin/curl", ["-sS", "-f", "-o", "/dev/null", "-X", "PUT", "-H", "X-Parse-Application-Id: ferry-test",
                                            "-H", "X-Parse-REST-API-Key: rest-secret", "-H", "Content-Type: application/json",
                                            "--data", #"{"n":100}"#, server.mount + "/classes/Quote/" + leaving])
        let second = try server.sync(store, cursor: first.finalCursor, reconcile: true)
        #expect(second.error == nil)
        #expect(second.records.isEmpty)
        #expect(Set(second.listed) == matching.subtracting([leaving]))
        #expect(second.outcome?.listingComplete == true)
    }

    @Test func pendingIDsAreFetchedWithinTheFilter() throws {
        let server = try ParseTestServer.start()
        try server.admin("seed", ["class": "Quote", "count": 20, "seed": 4])
        let inside = try #require(try ids(server) { $0 < 10 }.sorted().first)
        let outside = try #require(try ids(server) { $0 >= 10 }.sorted().first)
        let first = try server.sync(filtered(server))
        // Nothing changed since: only the pending ids are read, by id, within the filter.
        let pass = try SourceRun(store: filtered(server), plan: PassPlan(cursor: first.finalCursor, reconcile: false, pendingIDs: [inside, outside])).runToCompletion()
        #expect(pass.error == nil)
        #expect(pass.records.contains { $0.id == inside })
        #expect(!pass.records.contains { $0.id == outside })
    }

    @Test func theFilterIsValidatedWhenTheConfigurationLoads() {
        #expect(ParseOptions.filter(#"{"score":{"$gt":10}}"#) == #"{"score":{"$gt":10}}"#)
        #expect(ParseOptions.filter(#" {"a":true} "#) == #"{"a":true}"#)
        for bad in ["", "{}", "[1]", "score > 10", #"{"a":"#] {
            #expect(ParseOptions.filter(bad) == nil, "\(bad)")
        }
    }
}
