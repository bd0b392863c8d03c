import Foundation
import Logging
import Testing
@testable import FerryKit
import FerryTestSupport

/// Every way a pass can finish with the replica knowingly different from the remote is said
/// (the report's gaps, the sync state's `incomplete`, `ferry status`'s state) and retried by
/// later passes until it closes: against the Parse test server and the JSON pages server.
@Suite("Passes that leave something out say so", .serialized)
struct IncompletePassTests {
    /// One pass through the real pass operation into `database`.
    static func pass(_ store: StoreConfiguration, _ database: SharedDatabase, reconcile: Bool = false, sweepInterval: Duration? = nil,
                     trigger: PassTrigger = .scheduled, cancelAfter: Duration? = nil) throws -> Result<PassReport, SyncError> {
        try PassRun.run(store, database, trigger: trigger, reconcile: reconcile, sweepInterval: sweepInterval, cancelAfter: cancelAfter)
    }

    static func state(_ store: String, _ database: SharedDatabase) throws -> SyncState {
        try #require(try database.write { try $0.syncState(of: store) })
    }

    @Test func aRefusedSweepIsIncompleteAndRetriedUntilAllowed() throws {
        let server = try ParseTestServer.start()
        try server.admin("seed", ["class": "Quote", "count": 100, "seed": 1])
        let directory = try TemporaryDirectory()
        let database = try SharedDatabase(path: directory.path("replica.db"))
        defer { database.close() }
        var store = server.store(pageSize: 50)
        _ = try Self.pass(store, database).get()

        // The remote loses 80 of its 100 objects and gains 10: 80% would go, over the 50% limit.
        let dump = try server.dump()
        let doomed = dump.prefix(80).compactMap { $0["objectId"] as? String }
        try server.admin("mutate", ["class": "Quote", "delete": 0, "update": 0, "create": 10])
        try server.admin("delete", ["class": "Quote", "ids": doomed])
        let refused = try Self.pass(store, database, reconcile: true).get()
        #expect(refused.gaps == [.sweepRefused(wouldDelete: 80, of: 100, maxShare: 0.5)], "\(refused.gaps)")
        #expect(!refused.isComplete)
        var state = try Self.state("quotes", database)
        #expect(state.sweepPending)
        #expect(state.incomplete?.contains("refused to delete 80 of 100 records") == true)
        #expect(StoreStatus.state(of: state) == "incomplete")
        #expect(try database.write { try $0.recordCount(of: "quotes") } == 110, "nothing was deleted, the new objects were stored")

        // Without being asked to reconcile, the next pass still does: the sweep is owed.
        let again = try Self.pass(store, database, reconcile: false).get()
        #expect(again.gaps.first == .sweepRefused(wouldDelete: 80, of: 110, maxShare: 0.5))

        // Allowed now: swept, and the store is whole again.
        store.maxDeleteShare = 1
        let swept = try Self.pass(store, database, reconcile: false).get()
        #expect(swept.isComplete)
        #expect(swept.reconciliation == .swept(deleted: 80))
        state = try Self.state("quotes", database)
        #expect(state.incomplete == nil && !state.sweepPending)
        #expect(StoreStatus.state(of: state) == "ok")
        #expect(try database.write { try $0.recordCount(of: "quotes") } == 30)
    }

    @Test func aFailedIDListingIsIncompleteAndTheSweepIsOwed() throws {
        let server = try ParseTestServer.start()
        try server.admin("seed", ["class": "Quote", "count": 60, "seed": 2])
        let directory = try TemporaryDirectory()
        let database = try SharedDatabase(path: directory.path("replica.db"))
        defer { database.close() }
        let store = server.store(pageSize: 100)
        _ = try Self.pass(store, database).get()
        let gone = try #require(try server.dump().first?["objectId"] as? String)
        try server.admin("delete", ["class": "Quote", "ids": [gone]])
        // The changes request passes; the listing after it fails (every retry too).
        try server.admin("fault", ["after": 1, "next": 5, "status": 500])
        let skipped = try Self.pass(store, database, reconcile: true).get()
        guard case .sweepSkipped(let reason)? = skipped.gaps.first else {
            Issue.record("no sweep gap: \(skipped.gaps)")
            return
        }
        #expect(reason.contains("HTTP 500"), "\(reason)")
        #expect(try Self.state("quotes", database).sweepPending)
        #expect(try database.write { try $0.recordCount(of: "quotes") } == 60, "the deleted object is still there")

        try server.admin("fault", ["clear": true])
        let swept = try Self.pass(store, database, reconcile: false).get()
        #expect(swept.isComplete, "\(swept.gaps)")
        #expect(swept.reconciliation == .swept(deleted: 1))
        #expect(try Self.state("quotes", database).incomplete == nil)
    }

    @Test func recordsNotStoredArePendingAndFetchedAgainByID() throws {
        let server = try ParseTestServer.start()
        try server.admin("seed", ["class": "Quote", "count": 40, "seed": 3, "size": 300])
        try server.admin("seed", ["class": "Quote", "count": 3, "seed": 4, "size": 5000])
        let directory = try TemporaryDirectory()
        let database = try SharedDatabase(path: directory.path("replica.db"))
        defer { database.close() }
        var store = server.store(pageSize: 100)
        store.maxRecordBytes = 2000
        let first = try Self.pass(store, database).get()
        guard case .recordsSkipped(let count, let sample, let rereadAll)? = first.gaps.first else {
            Issue.record("no skipped-records gap: \(first.gaps)")
            return
        }
        #expect(count == 3 && sample.count == 3 && !rereadAll)
        var state = try Self.state("quotes", database)
        #expect(state.pendingRecords == 3)
        #expect(StoreStatus.state(of: state) == "incomplete")

        // Still too large: still pending, still incomplete (an incremental pass does not see them
        // again by itself; it asks for them).
        let second = try Self.pass(store, database).get()
        #expect(second.gaps.count == 1)
        // Fixed: the next incremental pass fetches exactly those three by id and stores them.
        store.maxRecordBytes = 1 << 20
        let third = try Self.pass(store, database).get()
        #expect(third.isComplete, "\(third.gaps)")
        #expect(third.counts.inserted == 3)
        state = try Self.state("quotes", database)
        #expect(state.pendingRecords == 0 && state.incomplete == nil)
        #expect(try database.write { try $0.recordCount(of: "quotes") } == 43)
    }

    @Test func aCancelledFirstSyncStaysIncomplete() throws {
        let server = try ParseTestServer.start()
        try server.admin("seed", ["class": "Quote", "count": 3000, "seed": 5])
        let directory = try TemporaryDirectory()
        let database = try SharedDatabase(path: directory.path("replica.db"))
        defer { database.close() }
        // Small pages, slowed down, so the cancel lands part-way.
        try server.admin("fault", ["after": 2, "next": 1, "kind": "stall", "seconds": 3])
        let cancelled = try Self.pass(server.store(pageSize: 100), database, cancelAfter: .milliseconds(800))
        guard case .failure(let error) = cancelled, error.kind == .cancelled else {
            Issue.record("the pass was not cancelled: \(cancelled)")
            return
        }
        let state = try Self.state("quotes", database)
        #expect(state.incomplete == ReplicaGap.firstSyncUnfinished.description)
        #expect(StoreStatus.state(of: state) == "incomplete")
        #expect(state.recordCount > 0 && state.recordCount < 3000)
        try server.admin("fault", ["clear": true])
        #expect(try Self.pass(server.store(pageSize: 100), database).get().isComplete)
        #expect(StoreStatus.state(of: try Self.state("quotes", database)) == "ok")
    }

    @Test func paginationThatEndsBeforeTheTotalIsIncomplete() throws {
        let server = try TestServer.python("json_pages_server.py", arguments: ["--count", "120"])
        let directory = try TemporaryDirectory()
        let database = try SharedDatabase(path: directory.path("replica.db"))
        defer { database.close() }
        // One page read, and the page says 120.
        let store = try configuredStore(kind: "json", url: server.baseURL + "/nexturl", [
            "records-path": "items", "pagination": "none", "total-path": "total", "page-size-param": "per_page", "page-size": "50",
        ])
        let report = try Self.pass(store, database).get()
        #expect(report.gaps == [.paginationEndedEarly(read: 50, expected: 120,
                                                        hint: "page 1 said total = 120 and no page linked further (check pagination =)")])
        #expect(try Self.state("items", database).sweepPending)
    }

    @Test func aMistypedNextFieldIsAConfigurationError() throws {
        let server = try TestServer.python("json_pages_server.py", arguments: ["--count", "120"])
        let directory = try TemporaryDirectory()
        let database = try SharedDatabase(path: directory.path("replica.db"))
        defer { database.close() }
        let store = try configuredStore(kind: "json", url: server.baseURL + "/nexturl", [
            "records-path": "items", "pagination": "next-url:next_page", "page-size-param": "per_page", "page-size": "50",
        ])
        let error = try #require(Self.failure(try Self.pass(store, database)))
        #expect(error.kind == .configuration)
        #expect(error.message.contains("set pagination = next-url:next"), "\(error.message)")
        #expect(try database.write { try $0.recordCount(of: "items") } == 0)
    }

    @Test func idAndVersionFieldsThatMatchNoRecordAreAConfigurationError() throws {
        let server = try TestServer.python("json_pages_server.py", arguments: ["--count", "30"])
        let directory = try TemporaryDirectory()
        let database = try SharedDatabase(path: directory.path("replica.db"))
        defer { database.close() }
        for (key, value, says) in [("id-field", "uuid", "id-field uuid matches none of the 30 records"),
                                   ("version-field", "modified", "version-field modified matches none of the 30 records")] {
            let store = try configuredStore(kind: "json", url: server.baseURL + "/nexturl", [
                "records-path": "items", "pagination": "next-url:next", key: value,
            ])
            let error = try #require(Self.failure(try Self.pass(store, database)))
            #expect(error.kind == .configuration)
            #expect(error.message.contains(says), "\(error.message)")
        }
    }

    static func failure(_ result: Result<PassReport, SyncError>) -> SyncError? {
        if case .failure(let error) = result { error } else { nil }
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A conditional request answered 304 stands for the whole collection only when the
/// collection is one page; a resync a person asks for never takes the shortcut.
@Suite("Conditional requests never hide pages", .serialized)
struct ConditionalRequestTests {
    static func stats(_ server: TestServer) throws -> (requests: Int, notModified: Int) {
        let object = try JSONSerialization.jsonObject(with: try server.control("/stats")) as? [String: Any]
        return (object?["requests"] as? Int ?? -1, object?["not_modified"] as? Int ?? -1)
    }

    @Test func aMultiPageCollectionIsReadWhole_aOnePageOneMayBeNotModified() throws {
        let server = try TestServer.python("json_pages_server.py", arguments: ["--count", "120"])
        let directory = try TemporaryDirectory()
        let database = try SharedDatabase(path: directory.path("replica.db"))
        defer { database.close() }
        let paged = try configuredStore(name: "paged", kind: "json", url: server.baseURL + "/nexturl", [
            "records-path": "items", "pagination": "next-url:next", "page-size-param": "per_page", "page-size": "50",
        ])
        _ = try IncompletePassTests.pass(paged, database).get()
        // A record on the last page changes; page 1's own ETag does not.
        _ = try server.control("/admin/update", method: "POST", body: #"{"ids":[110]}"#)
        let second = try IncompletePassTests.pass(paged, database).get()
        #expect(!second.unchanged)
        #expect(second.counts.updated == 1)
        #expect(try Self.stats(server).notModified == 0, "no page of a multi-page collection was asked conditionally")

        // One page: the validators stand for the collection, and an unchanged one costs a 304...
        let single = try configuredStore(name: "single", kind: "json", url: server.baseURL + "/nexturl", [
            "records-path": "items", "pagination": "next-url:next", "page-size-param": "per_page", "page-size": "500",
        ])
        _ = try IncompletePassTests.pass(single, database).get()
        let quiet = try IncompletePassTests.pass(single, database).get()
        #expect(quiet.unchanged)
        #expect(try Self.stats(server).notModified == 1)
        // ...except when a person asks for a resync: then it is read whole.
        let resync = try IncompletePassTests.pass(single, database, trigger: .onDemand).get()
        #expect(!resync.unchanged)
        #expect(try Self.stats(server).notModified == 1)
    }
}
