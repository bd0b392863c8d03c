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
}
