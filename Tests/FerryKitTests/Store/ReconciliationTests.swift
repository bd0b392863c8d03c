import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

@Suite("Replica reconciliation")
struct ReconciliationTests {
    static func replica(_ directory: TemporaryDirectory, deletion: DeletionPolicy = .hard, rows: Int = 10) throws -> ReplicaDatabase {
        let replica = try ReplicaDatabase(path: directory.path("replica.db"))
        try replica.prepare(StoreDefinition(name: "items", deletion: deletion))
        _ = try replica.apply(ChangeBatch(changes: (0..<rows).map { record("r\($0)", version: "1") }, cursor: "c"), to: "items")
        return replica
    }

    @Test func sweepsRowsMissingFromTheListing() throws {
        let directory = try TemporaryDirectory()
        let replica = try Self.replica(directory)
        let logBefore = try replica.changeLogCount()
        try replica.beginReconciliation(of: "items")
        try replica.markPresent(["r0", "r1", "r2", "r3"], in: "items")
        try replica.markPresent(["r4", "r5", "r6", "r7", "unknown-remote-id"], in: "items")
        #expect(try replica.finishReconciliation(of: "items", maxDeleteShare: 0.5) == .swept(deleted: 2))
        #expect(Set(try replica.rows(of: "items").keys) == Set((0..<8).map { "r\($0)" }))
        let log = try replica.changes(after: 0, limit: 100).suffix(2)
        #expect(log.map(\.operation) == ["delete", "delete"])
        #expect(Set(log.map(\.id)) == ["r8", "r9"])
        #expect(try replica.changeLogCount() == logBefore + 2)
    }

    @Test func aSecondSweepChangesNoSchema_soNoPreparedStatementExpires() throws {
        let directory = try TemporaryDirectory()
        let replica = try Self.replica(directory)
        defer { replica.close() }
        func sweep(keeping ids: [String]) throws -> ReconcileOutcome {
            try replica.beginReconciliation(of: "items")
            try replica.markPresent(ids, in: "items")
            return try replica.finishReconciliation(of: "items", maxDeleteShare: 1)
        }
        #expect(try sweep(keeping: (0..<9).map { "r\($0)" }) == .swept(deleted: 1))
        let main = try replica.connection.scalarInt("PRAGMA main.schema_version")
        let temp = try replica.connection.scalarInt("PRAGMA temp.schema_version")
        #expect(try sweep(keeping: (0..<8).map { "r\($0)" }) == .swept(deleted: 1), "the marks of the first sweep are gone")
        replica.cancelReconciliation(of: "items")
        try replica.beginReconciliation(of: "items")
        replica.cancelReconciliation(of: "items")
        #expect(try replica.connection.scalarInt("PRAGMA main.schema_version") == main)
        #expect(try replica.connection.scalarInt("PRAGMA temp.schema_version") == temp)
        #expect(try sweep(keeping: []) == .swept(deleted: 8), "a cancelled reconciliation leaves no marks behind")
    }

    /// The refusal rule, read as a table: (would delete, live rows, share) → refused?
    @Test func theRefusalRule() {
        let cases: [(Int, Int, Double, Bool)] = [
            (0, 0, 0, false), (0, 10, 0, false), (1, 10, 0, true), (5, 10, 0.5, false),
            (6, 10, 0.5, true), (10, 10, 1, false), (1, 0, 1, true),
        ]
        for (wouldDelete, total, share, refused) in cases {
            let outcome = ReconcileOutcome.refusal(wouldDelete: wouldDelete, of: total, maxDeleteShare: share)
            #expect(outcome == (refused ? .refused(wouldDelete: wouldDelete, of: total) : nil), "\(wouldDelete) of \(total) at \(share)")
        }
    }

    @Test func refusesMassDeletion() throws {
        let directory = try TemporaryDirectory()
        let replica = try Self.replica(directory)
        try replica.beginReconciliation(of: "items")
        try replica.markPresent(["r0", "r1", "r2", "r3"], in: "items")
        #expect(try replica.finishReconciliation(of: "items", maxDeleteShare: 0.5) == .refused(wouldDelete: 6, of: 10))
        #expect(try replica.recordCount(of: "items") == 10)
        // The reconciliation is over either way.
        #expect(throws: StoreError.self) { try replica.markPresent(["r0"], in: "items") }
        // Exactly at the share is allowed.
        try replica.beginReconciliation(of: "items")
        try replica.markPresent((0..<5).map { "r\($0)" }, in: "items")
        #expect(try replica.finishReconciliation(of: "items", maxDeleteShare: 0.5) == .swept(deleted: 5))
    }

    @Test func tombstoneStoreKeepsSweptRows() throws {
        let directory = try TemporaryDirectory()
        let replica = try Self.replica(directory, deletion: .tombstone, rows: 4)
        try replica.beginReconciliation(of: "items")
        try replica.markPresent(["r0", "r1", "r2"], in: "items")
        #expect(try replica.finishReconciliation(of: "items", maxDeleteShare: 0.5) == .swept(deleted: 1))
        #expect(try replica.rows(of: "items") == ["r0": "1", "r1": "1", "r2": "1", "r3": "1†"])
        #expect(try replica.recordCount(of: "items") == 3)
        // A second sweep does not delete the tombstone again.
        try replica.beginReconciliation(of: "items")
        try replica.markPresent(["r0", "r1", "r2"], in: "items")
        #expect(try replica.finishReconciliation(of: "items", maxDeleteShare: 0.5) == .swept(deleted: 0))
    }

    @Test func recordsUpsertedDuringReconciliationArePresent() throws {
        let directory = try TemporaryDirectory()
        let replica = try Self.replica(directory, rows: 4)
        try replica.beginReconciliation(of: "items")
        _ = try replica.apply(ChangeBatch(changes: [record("late", version: "1")], cursor: nil), to: "items")
        try replica.markPresent(["r0", "r1", "r2", "r3"], in: "items")
        #expect(try replica.finishReconciliation(of: "items", maxDeleteShare: 0.5) == .swept(deleted: 0))
        #expect(try replica.recordCount(of: "items") == 5)
    }

    @Test func cancelSweepsNothing() throws {
        let directory = try TemporaryDirectory()
        let replica = try Self.replica(directory, rows: 4)
        try replica.beginReconciliation(of: "items")
        try replica.markPresent(["r0"], in: "items")
        replica.cancelReconciliation(of: "items")
        #expect(throws: StoreError.self) { try replica.finishReconciliation(of: "items", maxDeleteShare: 1) }
        #expect(try replica.recordCount(of: "items") == 4)
    }

    /// Marks are held sorted (in runs on disk once the arena is full) and reach the temp table
    /// in id order: the sweep must be exactly that of marks kept in memory.
    @Test func marksInManyRunsOnDisk_sweepExactlyTheUnlisted_inIDOrder_andLeaveNothingBehind() throws {
        let directory = try TemporaryDirectory()
        let replica = try Self.replica(directory, rows: 3_000)
        defer { replica.close() }
        replica.marksArenaBytes = 2 << 10
        let logBefore = try replica.changeLogCount()
        try replica.beginReconciliation(of: "items")
        // r0..r2399 listed twice each, on pages of 100 in a shuffled order, with ids the
        // replica does not hold; r2500..r2599 arrive as merged records instead of listed ones.
        var generator = SeededGenerator(seed: 5)
        let listed = ((0 ..< 2_400).map { "r\($0)" } + (0 ..< 2_400).map { "r\($0)" } + (0 ..< 300).map { "remote-only-\($0)" })
            .shuffled(using: &generator)
        for start in stride(from: 0, to: listed.count, by: 100) {
            try replica.markPresent(Array(listed[start ..< min(start + 100, listed.count)]), in: "items")
            if start == 1_000 {
                _ = try replica.apply(ChangeBatch(changes: (2_500 ..< 2_600).map { record("r\($0)", version: "2") }, cursor: nil), to: "items")
            }
        }
        guard case .marking(_, let marks, _) = replica.reconciliations["items"] else { Issue.record("not reconciling"); return }
        #expect(marks.runs.count > 20)
        #expect(try replica.finishReconciliation(of: "items", maxDeleteShare: 1) == .swept(deleted: 500))
        let expected = Set((0 ..< 2_400).map { "r\($0)" } + (2_500 ..< 2_600).map { "r\($0)" })
        #expect(Set(try replica.rows(of: "items").keys) == expected)
        let log = try replica.changes(after: 0, limit: 10_000)
        let deletes = log.filter { $0.operation == "delete" }
        #expect(try replica.changeLogCount() == logBefore + 100 + 500)
        #expect(Set(deletes.map(\.id)) == Set((2_400 ..< 2_500).map { "r\($0)" } + (2_600 ..< 3_000).map { "r\($0)" }))
        #expect(deletes.map(\.id) == deletes.map(\.id).sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) },
                "sweeps are logged in id order")
        #expect(try replica.connection.scalarInt("SELECT count(*) FROM temp.ferry_present") == 0)
        #expect(replica.reconciliations.isEmpty)
        #expect(marks.isEmpty && marks.runs.isEmpty, "the marks' spool is let go")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { !$0.hasPrefix("replica.db") }.isEmpty)
    }

    /// The walk of the marks beside the id index, which decides whether a sweep has anything
    /// to do: live rows not listed, listed ids without a row, pending records listed.
    @Test func theWalkOfMarksBesideTheIndexCountsWhatTheSweepWouldDo() throws {
        let directory = try TemporaryDirectory()
        let replica = try ReplicaDatabase(path: directory.path("replica.db"))
        defer { replica.close() }
        try replica.prepare(StoreDefinition(name: "items", deletion: .tombstone, maxRecordBytes: 40))
        let ids = SortedSpoolTests.awkwardIDs
        _ = try replica.apply(ChangeBatch(changes: ids.map { record($0, version: "1") }, cursor: nil), to: "items")
        _ = try replica.apply(ChangeBatch(changes: [.delete(id: "abcdefg")], cursor: nil), to: "items")
        // Two records the replica cannot store (too large): pending.
        let large = Data(String(repeating: "x", count: 50).utf8)
        _ = try replica.apply(ChangeBatch(changes: ["p1", "p2"].map { .upsert(RemoteRecord(id: $0, version: "1", body: large)) }, cursor: nil), to: "items")
        replica.marksArenaBytes = 64
        try replica.beginReconciliation(of: "items")
        // Listed: every other awkward id, the tombstone, one pending record, one id never stored.
        let listed = ids.enumerated().filter { $0.offset % 2 == 0 }.map(\.element) + ["abcdefg", "p1", "never-stored"]
        try replica.markPresent(listed.reversed(), in: "items")
        let notListed = ids.enumerated().filter { $0.offset % 2 == 1 && $0.element != "abcdefg" }
        #expect(try replica.sweepScan(of: "items") == SweepScan(liveNotListed: notListed.count, listedMissing: 1, listedPending: ["p1"]))
        #expect(try replica.listedRecordsMissing(from: "items") == 1)
        #expect(try replica.finishReconciliation(of: "items", maxDeleteShare: 1) == .swept(deleted: notListed.count))
        #expect(try replica.pendingRecordIDs(of: "items") == ["p1"], "a pending record the listing no longer names is gone")

        // Nothing to delete: the sweep ends at the walk, and still forgets a pending record not listed.
        _ = try replica.apply(ChangeBatch(changes: [.upsert(RemoteRecord(id: "p3", version: "1", body: large))], cursor: nil), to: "items")
        try replica.beginReconciliation(of: "items")
        try replica.markPresent(listed + ["p3"], in: "items")
        #expect(try replica.sweepScan(of: "items").liveNotListed == 0)
        #expect(try replica.finishReconciliation(of: "items", maxDeleteShare: 1) == .swept(deleted: 0))
        #expect(Set(try replica.pendingRecordIDs(of: "items")) == ["p1", "p3"])
        try replica.beginReconciliation(of: "items")
        try replica.markPresent(listed.filter { $0 != "p1" }, in: "items")
        #expect(try replica.finishReconciliation(of: "items", maxDeleteShare: 1) == .swept(deleted: 0))
        #expect(try replica.pendingRecordIDs(of: "items").isEmpty)
    }

    @Test func binaryOrderIsSQLitesOrder() throws {
        let directory = try TemporaryDirectory()
        let replica = try ReplicaDatabase(path: directory.path("replica.db"))
        defer { replica.close() }
        let ids = SortedSpoolTests.awkwardIDs + ["", "abc\u{0}d", "ab\u{7F}", "ab\u{80}"]
        try replica.connection.execute("CREATE TEMP TABLE ordered(id TEXT PRIMARY KEY)")
        for id in ids {
            let insert = try replica.connection.prepare("INSERT INTO ordered(id) VALUES (?1)")
            try insert.bind(id, at: 1)
            try insert.run()
        }
        let statement = try replica.connection.prepare("SELECT id FROM ordered ORDER BY id")
        var sqlite: [String] = []
        while try statement.step() { sqlite.append(statement.string(at: 0) ?? "") }
        #expect(ids.sorted { ReplicaDatabase.binaryOrder(Array($0.utf8), Array($1.utf8)) < 0 } == sqlite)
        #expect(ReplicaDatabase.binaryOrder(Array("abc".utf8), Array("abc".utf8)) == 0)
    }
}
