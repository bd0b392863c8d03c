import Foundation
import Logging
import Testing
@testable import FerryKit
import FerryTestSupport

/// A DAV store never passes as whole while it differs from its collection: a URL that is not
/// the collection is refused, members a multiget misses are fetched by GET, and a resync whose
/// sweep is refused stays pending until it is allowed. Against Radicale and Xandikos.
@Suite("WebDAV passes leave nothing out silently", .serialized,
       .enabled(if: DAVServer.shouldRun, "radicale/xandikos not installed: pip install radicale xandikos into $FERRY_VENV"))
struct WebDAVCompletenessTests {
    @Test(arguments: DAVServer.Kind.allCases)
    func aURLThatIsNotTheCollectionIsAConfigurationError(_ kind: DAVServer.Kind) throws {
        let server = try DAVServer.shared(kind)
        let principal = server.principalPath
        let cases: [(StoreKind, String, String)] = [
            (.carddav, server.baseURL + principal, "is a principal"),
            (.carddav, server.calendarURL, "is a calendar: set kind = caldav"),
            (.caldav, server.addressBookURL, "is an address book: set kind = carddav"),
        ]
        for (storeKind, url, says) in cases {
            let pass = try server.pass(server.store(storeKind, url: url), cursor: nil)
            let error = try #require(pass.error, "\(url) as \(storeKind) passed")
            #expect(error.kind == .configuration, "\(error)")
            #expect(error.message.contains(says), "\(url): \(error.message)")
            #expect(pass.batches.isEmpty && pass.listed.isEmpty)
        }
    }

    /// Xandikos's multiget misreads a member href with `%23` and answers 404 for it, while a
    /// GET serves it: the member is fetched alone, not skipped.
    @Test func aMemberTheMultigetMissesIsFetchedByGET() throws {
        let server = try DAVServer(.xandikos, cards: 5, events: 0)
        defer { server.stop() }
        let store = server.store(batch: 10)
        let first = try server.pass(store, cursor: nil)
        let token = try #require(first.finalCursor)
        try server.put(server.addressBookPath + "hash%23x.vcf", DAVServer.vCard(uid: "hash-x", name: "Hash", email: "hash@example.com"))
        try server.put(server.addressBookPath + "card-1.vcf", DAVServer.vCard(uid: "ferry-card-1", name: "One", email: "one@example.com"))
        let second = try server.pass(store, cursor: token)
        #expect(second.error == nil, "\(String(describing: second.error))")
        #expect(second.problems.isEmpty, "\(second.problems)")
        #expect(second.upserts["hash#x.vcf"]?.fields?["UID"] == "hash-x")
        #expect(second.upserts["card-1.vcf"]?.fields?["FN"] == "One")
        // The token comes with the last batch, after the GET.
        #expect(second.batches.last?.cursor != nil && second.finalCursor != token)
    }

    /// A refused sync token (the collection was rebuilt, or the server lost its history) means
    /// a resync; when its sweep is refused, the old token stays, so every later pass resyncs
    /// and says so until the sweep is allowed. Xandikos only: Radicale's resync from an empty
    /// token names the members it deleted (404s from its history), which are deletions it
    /// states, not ones a sweep infers, so no sweep is refused there.
    @Test func aDueSweepCostsADAVStoreNothing_itsTokenNamesDeletions() throws {
        let server = try DAVServer.shared(.xandikos)
        let directory = try TemporaryDirectory()
        let database = try SharedDatabase(path: directory.path("replica.db"))
        defer { database.close() }
        let store = server.store()
        _ = try IncompletePassTests.pass(store, database).get()
        // `ferry sync` asks for a sweep on every run (reconcile-interval is due): with a sync
        // token that lists deletions, the pass stays one REPORT.
        let quiet = try IncompletePassTests.pass(store, database, reconcile: true).get()
        #expect(quiet.requests == 1 && quiet.reconciliation == nil, "\(quiet.requests) requests, \(String(describing: quiet.reconciliation))")
        #expect(quiet.isComplete)
    }

    @Test func aResyncWhoseSweepIsRefusedStaysPending() throws {
        let server = try DAVServer(.xandikos, cards: 20, events: 0)
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let database = try SharedDatabase(path: directory.path("replica.db"))
        defer { database.close() }
        var store = server.store(batch: 10)
        _ = try IncompletePassTests.pass(store, database).get()
        // 15 of 20 go, and the stored token no longer counts.
        for i in 0..<15 { try server.delete(server.addressBookPath + "card-\(i).vcf") }
        try database.write { try $0.storeCursor("not-a-token-anymore", of: "contacts") }
        let refused = try IncompletePassTests.pass(store, database).get()
        #expect(refused.gaps == [.sweepRefused(wouldDelete: 15, of: 20, maxShare: 0.5)], "\(refused.gaps)")
        let held = try #require(try database.write { try $0.syncState(of: "contacts") })
        #expect(held.cursor == "not-a-token-anymore", "the new token waits for the sweep")
        #expect(StoreStatus.state(of: held) == "incomplete")
        // Again, refused again: nothing lost, nothing silently accepted.
        #expect(try IncompletePassTests.pass(store, database).get().gaps.count == 1)
        #expect(try database.write { try $0.recordCount(of: "contacts") } == 20)
        // Allowed: swept, the new token stored, whole again.
        store.maxDeleteShare = 1
        let swept = try IncompletePassTests.pass(store, database).get()
        #expect(swept.isComplete, "\(swept.gaps)")
        #expect(swept.reconciliation == .swept(deleted: 15))
        let state = try #require(try database.write { try $0.syncState(of: "contacts") })
        #expect(state.cursor != held.cursor && state.incomplete == nil)
        #expect(try database.write { try $0.recordCount(of: "contacts") } == 5)
        // And the next pass is an ordinary incremental one.
        let quiet = try IncompletePassTests.pass(store, database).get()
        #expect(quiet.isComplete && quiet.reconciliation == nil)
    }
}
