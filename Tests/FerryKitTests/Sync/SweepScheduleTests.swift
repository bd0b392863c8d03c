import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// When a pass that may sweep deleted ids does: the table of SweepSchedule, and passes against
/// the Parse test server that read and write the replica's record of the last sweep.
@Suite struct SweepScheduleTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let hour = Duration.seconds(3600)

    @Test func theTable() {
        let table: [(asked: Bool, every: Duration?, lastSwept: Date?, sweeps: Bool)] = [
            (false, nil, nil, false),
            (false, Self.hour, nil, false),
            (true, nil, Self.now - 10, true),
            (true, Self.hour, nil, true),
            (true, Self.hour, Self.now - 3600, true),
            (true, Self.hour, Self.now - 3599, false),
            (true, Self.hour, Self.now - 10, false),
            (true, Self.hour, Self.now + 600, true),
        ]
        for row in table {
            #expect(SweepSchedule.sweeps(asked: row.asked, every: row.every, lastSwept: row.lastSwept, now: Self.now) == row.sweeps,
                    "\(row)")
        }
    }

    @Test func aSweepIsDueByTheReplicasRecord_notByTheProcess() throws {
        let server = try ParseTestServer.start()
        try server.admin("seed", ["class": "Quote", "count": 60, "seed": 2])
        let directory = try TemporaryDirectory()
        let database = try SharedDatabase(path: directory.path("replica.db"))
        defer { database.close() }
        let store = server.store(pageSize: 50)
        _ = try IncompletePassTests.pass(store, database).get()
        #expect(try IncompletePassTests.state("quotes", database).lastSwept == nil, "a first sync has nothing to sweep")

        // Asked with an interval and never swept: it sweeps, and the replica remembers.
        let first = try IncompletePassTests.pass(store, database, reconcile: true, sweepInterval: Self.hour).get()
        #expect(first.reconciliation == .swept(deleted: 0))
        let swept = try #require(try IncompletePassTests.state("quotes", database).lastSwept)
        #expect(abs(swept.timeIntervalSinceNow) < 60)

        // A new process (`ferry sync`, a restarted ferryd) asks again: not due, so no listing.
        let doomed = try #require(try server.dump().first?["objectId"] as? String)
        try server.admin("delete", ["class": "Quote", "ids": [doomed]])
        let quiet = try IncompletePassTests.pass(store, database, reconcile: true, sweepInterval: Self.hour).get()
        #expect(quiet.reconciliation == nil)
        #expect(try database.write { try $0.recordCount(of: "quotes") } == 60)

        // `ferry sync --sweep` (no interval) sweeps now.
        let forced = try IncompletePassTests.pass(store, database, reconcile: true).get()
        #expect(forced.reconciliation == .swept(deleted: 1))
        #expect(try database.write { try $0.recordCount(of: "quotes") } == 59)
    }
}
