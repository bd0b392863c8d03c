import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// ParseSource against parse_server.py: full and incremental passes, shared timestamps at page
/// boundaries, reconciliation, pipelining, cancellation.
@Suite(.serialized) struct ParseSourceTests {
    @Test func fullSyncEqualsDump() throws {
        let server = try ParseTestServer.start()
        try server.admin("seed", ["class": "Quote", "count": 2500, "seed": 1])
        let pass = try server.sync(server.store(pageSize: 1000))
        #expect(pass.error == nil)
        #expect(pass.offLoopCalls == 0 && pass.callsAfterEnd == 0)
        #expect(pass.batches.count == 3)
        #expect(pass.batches.first?.totalHint == 2500)
        #expect(pass.problems.isEmpty)
        let dump = try server.dump()
        let byId = Dictionary(uniqueKeysWithValues: pass.records.map { ($0.id, $0) })
        #expect(byId.count == pass.records.count, "no record twice")
        #expect(byId.count == dump.count)
        for object in dump {
            let id = try #require(object["objectId"] as? String)
            let record = try #require(byId[id], "missing \(id)")
            #expect(record.version == object["updatedAt"] as? String)
            #expect(try canonicalJSON(record.body) == canonicalJSON(object))
        }
        #expect(pass.outcome?.requests == 3)
        #expect(try server.stats()["skip_used"] as? Int == 0)
        // The cursor is the newest (updatedAt, objectId).
        let newest = dump.map { ParseCursor(updatedAt: $0["updatedAt"] as! String, objectId: $0["objectId"] as! String) }.max()
        #expect(pass.finalCursor.flatMap(ParseCursor.init(stored:)) == newest)
    }

    /// Parse answers a class it does not know (`class = Quotez`) with no objects, as it does an
    /// empty class: the pass says so as a gap (not `ok`, exit 2), naming `class =`; a class
    /// with objects has no such gap. (A typo synced 0 records, ok, exit 0.)
    @Test func aClassWithNoObjectsIsNotOK() throws {
        let server = try ParseTestServer.start()
        try server.admin("seed", ["class": "Quote", "count": 5, "seed": 4])
        let typo = try server.sync(server.store(className: "Quotez"))
        #expect(typo.error == nil && typo.records.isEmpty)
        guard case .nothingListed(let hint)? = typo.outcome?.gaps.first else {
            Issue.record("no gap for an empty listing: \(String(describing: typo.outcome))")
            return
        }
        #expect(hint.contains("Quotez") && hint.contains("class ="))
        let real = try server.sync(server.store())
        #expect(real.records.count == 5 && real.outcome?.gaps.isEmpty == true)
    }

    @Test func incrementalSyncReturnsExactlyTheChanges() throws {
        let server = try ParseTestServer.start()
        try server.admin("seed", ["class": "Quote", "count": 600, "seed": 2])
        let store = server.store(pageSize: 200)
        let first = try server.sync(store)
        #expect(first.records.count == 600)
        let mutation = try server.admin("mutate", ["class": "Quote", "update": 7, "delete": 5, "create": 9])
        let changed = Set((mutation["updated"] as? [String] ?? []) + (mutation["created"] as? [String] ?? []))
        let second = try server.sync(store, cursor: first.finalCursor, reconcile: true)
        #expect(second.error == nil)
        #expect(Set(second.records.map(\.id)) == changed)
        #expect(second.records.count == changed.count)
        // Reconciliation lists exactly the ids the server still has.
        let dumpIds = try server.dump().compactMap { $0["objectId"] as? String }
        #expect(second.listed.sorted() == dumpIds.sorted())
        #expect(second.outcome?.listingComplete == true)
        #expect(Set(mutation["deleted"] as? [String] ?? []).isDisjoint(with: second.listed))
        // Nothing changed: no records, the cursor stays.
        let third = try server.sync(store, cursor: second.finalCursor)
        #expect(third.records.isEmpty)
        #expect(third.outcome?.requests == 1)
        #expect(try server.stats()["skip_used"] as? Int == 0)
    }

    @Test func recordsSharingOneUpdatedAtAcrossPageBoundaries() throws {
        let server = try ParseTestServer.start()
        try server.admin("seed", ["class": "Quote", "count": 250, "same_updated_at": true, "seed": 3])
        let store = server.store(pageSize: 40)
        let first = try server.sync(store)
        #expect(first.error == nil)
        #expect(first.records.count == 250)
        #expect(Set(first.records.map(\.id)).count == 250)
        #expect(first.batches.count == 7)
        // A group sharing one newer timestamp, bigger than a page, straddling the boundaries.
        let mutation = try server.admin("mutate", ["class": "Quote", "update": 30, "create": 25, "same_updated_at": true])
        let changed = Set((mutation["updated"] as? [String] ?? []) + (mutation["created"] as? [String] ?? []))
        let second = try server.sync(server.store(pageSize: 7), cursor: first.finalCursor)
        #expect(second.error == nil)
        #expect(second.records.count == 55)
        #expect(Set(second.records.map(\.id)) == changed)
        // Resuming from a cursor in the middle of the group loses nothing and repeats nothing.
        let middle = try #require(second.batches[3].cursor)
        let resumed = try server.sync(server.store(pageSize: 7), cursor: middle)
        let before = Set(second.batches.prefix(4).flatMap(\.changes).map(\.id))
        #expect(Set(resumed.records.map(\.id)) == changed.subtracting(before))
        #expect(try server.stats()["skip_used"] as? Int == 0)
    }

    @Test func badKeyIsUnauthorized() throws {
        let server = try ParseTestServer.start()
        try server.admin("seed", ["class": "Quote", "count": 10])
        let pass = try server.sync(server.store(key: "wrong"))
        #expect(pass.error?.kind == .unauthorized)
        #expect(pass.error?.isRetryable == false)
        #expect(pass.batches.isEmpty)
        #expect(pass.error?.description.contains("wrong") == false, "the key never appears in errors")
    }

    @Test func nextPageStartsBeforeThePageIsHandedOver() throws {
        let server = try ParseTestServer.start()
        try server.admin("seed", ["class": "Quote", "count": 300])
        _ = try server.server.control("/__admin/stats/reset", method: "POST")
        var classRequestsDuringFirstBatch = 0
        let pass = try server.sync(server.store(pageSize: 100)) { sink, _ in
            sink.afterBatch = { number in
                guard number == 1 else { return }
                // Still inside didProduce of page 1: page 2 must already be requested.
                let deadline = Date().addingTimeInterval(5)
                while Date() < deadline {
                    let queries = (try? server.stats()["queries"] as? [String]) ?? []
                    classRequestsDuringFirstBatch = queries.count
                    if queries.count >= 2 { break }
                    Thread.sleep(forTimeInterval: 0.02)
                }
            }
        }
        #expect(pass.records.count == 300)
        #expect(classRequestsDuringFirstBatch >= 2)
    }

    @Test func cancelStopsEverySinkCall() throws {
        let server = try ParseTestServer.start()
        try server.admin("seed", ["class": "Quote", "count": 500])
        let pass = try server.sync(server.store(pageSize: 100)) { sink, source in
            sink.afterBatch = { number in
                if number == 2 {
                    source.cancel()
                    sink.markEnded()
                }
            }
        }
        #expect(pass.batches.count == 2)
        #expect(pass.outcome == nil && pass.error == nil)
        #expect(pass.callsAfterEnd == 0)
    }

    @Test func throwingSinkEndsThePass() throws {
        let server = try ParseTestServer.start()
        try server.admin("seed", ["class": "Quote", "count": 500])
        let pass = try server.sync(server.store(pageSize: 100)) { sink, _ in sink.failAfterBatches = 1 }
        #expect(pass.batches.count == 1)
        #expect(pass.callsAfterEnd == 0)
    }
}
