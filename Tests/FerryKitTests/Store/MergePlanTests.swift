import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// The merge rules without SQLite (``MergePlan``), and proof that the SQL merge, fast paths
/// included, does exactly what they say.
@Suite("Merge plan")
struct MergePlanTests {
    struct Row: Sendable, CustomStringConvertible {
        var change: RecordChange
        var stored: MergePlan.Stored?
        var comparison: VersionComparison = .ordered
        var deletion: DeletionPolicy = .hard
        var action: MergePlan.Action
        var description: String { "\(change) over \(stored.map { "\($0)" } ?? "nothing") -> \(action)" }
    }

    static let live5 = MergePlan.Stored(version: "5", deleted: false)
    static let tomb5 = MergePlan.Stored(version: "5", deleted: true)

    static let table: [Row] = [
        Row(change: record("a", version: "1"), stored: nil, action: .insert),
        Row(change: record("a", version: "6"), stored: live5, action: .update),
        Row(change: record("a", version: "5"), stored: live5, action: .unchanged),
        Row(change: record("a", version: "4"), stored: live5, action: .unchanged),
        Row(change: record("a", version: "10"), stored: MergePlan.Stored(version: "9", deleted: false), action: .update),
        Row(change: record("a", version: "5", "other"), stored: MergePlan.Stored(version: "5", deleted: false, body: Data("{}".utf8)), action: .update),
        Row(change: record("a", version: "5", "v"), stored: MergePlan.Stored(version: "5", deleted: false, body: Data(#"{"id":"a","value":"v"}"#.utf8)), action: .unchanged),
        Row(change: record("a", version: "4", "other"), stored: MergePlan.Stored(version: "5", deleted: false, body: Data("{}".utf8)), action: .unchanged),
        Row(change: record("a", version: "6"), stored: tomb5, action: .resurrect),
        Row(change: record("a", version: "5"), stored: tomb5, action: .resurrect),
        Row(change: record("a", version: "4"), stored: tomb5, action: .unchanged),
        Row(change: record("a", version: "\"e2\""), stored: MergePlan.Stored(version: "\"e1\"", deleted: false), comparison: .opaque, action: .update),
        Row(change: record("a", version: "\"e0\""), stored: MergePlan.Stored(version: "\"e1\"", deleted: false), comparison: .opaque, action: .update),
        Row(change: record("a", version: "\"e1\""), stored: MergePlan.Stored(version: "\"e1\"", deleted: false), comparison: .opaque, action: .unchanged),
        Row(change: record("a", version: "\"e1\"", "other"), stored: MergePlan.Stored(version: "\"e1\"", deleted: false, body: Data("{}".utf8)), comparison: .opaque, action: .update),
        Row(change: record("a", version: "\"e1\""), stored: MergePlan.Stored(version: "\"e1\"", deleted: true), comparison: .opaque, action: .resurrect),
        Row(change: .delete(id: "a"), stored: live5, action: .delete),
        Row(change: .delete(id: "a"), stored: live5, deletion: .tombstone, action: .tombstone),
        Row(change: .delete(id: "a"), stored: tomb5, deletion: .tombstone, action: .unchanged),
        Row(change: .delete(id: "a"), stored: nil, action: .unchanged),
        Row(change: .delete(id: ""), stored: nil, action: .problem("empty id")),
        Row(change: .upsert(RemoteRecord(id: "", version: "1", body: Data("{}".utf8))), stored: nil, action: .problem("empty id")),
        Row(change: .upsert(RemoteRecord(id: "a", version: "1", body: Data([0xFF]))), stored: nil, action: .problem("body is not valid UTF-8")),
        Row(change: .upsert(RemoteRecord(id: "a", version: "1", body: Data(repeating: 0x61, count: 65))), stored: live5,
            action: .problem("record is 65 bytes, more than the limit of 64")),
    ]

    @Test(arguments: table)
    func action(_ row: Row) {
        #expect(MergePlan.action(for: row.change, stored: row.stored, comparison: row.comparison, deletion: row.deletion, maxRecordBytes: 64) == row.action)
    }

    /// The replica-level table (``MergeSemanticsTests/cases``) holds for the plan alone.
    @Test(arguments: MergeSemanticsTests.cases)
    func semanticsTableWithoutSQLite(_ testCase: MergeSemanticsTests.Case) {
        var model = MergeModel(comparison: testCase.comparison, deletion: testCase.deletion)
        _ = model.apply(testCase.before)
        _ = model.apply(testCase.deletedBefore.map { .delete(id: $0) })
        model.log = []
        let counts = model.apply(testCase.batch)
        #expect(model.rows == testCase.after)
        #expect(counts.inserted == testCase.counts.inserted)
        #expect(counts.updated == testCase.counts.updated)
        #expect(counts.deleted == testCase.counts.deleted)
        #expect(counts.unchanged == testCase.counts.unchanged)
        #expect(model.log == testCase.logged)
    }

    /// Random batches through SQLite (whose fast paths switch with the batches' mix) and through
    /// the plan give the same rows, counts and change log.
    @Test(arguments: [(VersionComparison.ordered, DeletionPolicy.hard), (.ordered, .tombstone), (.opaque, .hard), (.opaque, .tombstone)])
    func sqlMergeAgreesWithThePlan(comparison: VersionComparison, deletion: DeletionPolicy) throws {
        var generator = SeededGenerator(seed: 0x5EED + UInt64(comparison == .opaque ? 1 : 0) * 2 + UInt64(deletion == .tombstone ? 1 : 0))
        var probes: [Probe] = []
        for round in 0..<20 {
            let directory = try TemporaryDirectory()
            let replica = try ReplicaDatabase(path: directory.path("replica.db"))
            defer { replica.close() }
            try replica.prepare(StoreDefinition(name: "items", deletion: deletion, comparison: comparison, maxRecordBytes: 64))
            var model = MergeModel(comparison: comparison, deletion: deletion, maxRecordBytes: 64)
            for batchNumber in 0..<12 {
                let batch = Self.randomBatch(using: &generator, mostlyNew: batchNumber % 3 == 0)
                let logBefore = try replica.changes(after: 0, limit: 100_000).last?.sequence ?? 0
                if let probe = replica.stores["items"]?.probe, !probes.contains(probe) { probes.append(probe) }
                let sql = try replica.apply(ChangeBatch(changes: batch, cursor: "c\(batchNumber)"), to: "items")
                model.log = []
                let planned = model.apply(batch)
                let where_ = "round \(round) batch \(batchNumber)"
                #expect(try replica.rows(of: "items") == model.rows, "\(where_)")
                #expect(sql.inserted == planned.inserted && sql.updated == planned.updated && sql.deleted == planned.deleted
                        && sql.unchanged == planned.unchanged && sql.skipped == planned.skipped, "\(where_): \(sql) vs \(planned)")
                let logged = try replica.changes(after: logBefore, limit: 100_000).map { "\($0.operation) \($0.id)" }
                #expect(logged == model.log, "\(where_)")
            }
        }
        #expect(Set(probes.map { "\($0)" }) == ["insert", "update", "read"], "every fast path ran")
    }

    static func randomBatch(using generator: inout SeededGenerator, mostlyNew: Bool) -> [RecordChange] {
        let size = Int.random(in: 0...24, using: &generator)
        return (0..<size).map { _ in
            let id = "r\(Int.random(in: 0..<(mostlyNew ? 60 : 12), using: &generator))"
            switch Int.random(in: 0..<20, using: &generator) {
            case 0: return .upsert(RemoteRecord(id: "", version: "1", body: Data("{}".utf8)))
            case 1: return .upsert(RemoteRecord(id: id, version: "1", body: Data([0x7B, 0xFF, 0x7D])))
            case 2: return .upsert(RemoteRecord(id: id, version: "9", body: Data(repeating: 0x61, count: 65)))
            case 3...6: return .delete(id: id)
            default:
                // Integers (numeric order) and short strings (byte order), so both compare paths run.
                let version = Bool.random(using: &generator) ? "\(Int.random(in: 0...30, using: &generator))" : "v\(Int.random(in: 0...9, using: &generator))"
                // Two bodies, so a version met again with another body (coarse stamps) runs too.
                return record(id, version: version, Bool.random(using: &generator) ? "x" : "y")
            }
        }
    }
}

/// An in-memory replica that merges by ``MergePlan`` alone: the model the SQL merge must match.
struct MergeModel {
    var comparison: VersionComparison
    var deletion: DeletionPolicy
    var maxRecordBytes = 1 << 20
    var stored: [String: MergePlan.Stored] = [:]
    /// "insert a", "delete b"... for the changes since it was last emptied.
    var log: [String] = []

    /// Rows as the semantics table writes them: id → version, "†" for a tombstone.
    var rows: [String: String] { stored.mapValues { $0.version + ($0.deleted ? "†" : "") } }

    mutating func apply(_ batch: [RecordChange]) -> MergeCounts {
        var counts = MergeCounts()
        var actions: [MergePlan.Action?] = batch.map { change in
            let action = MergePlan.action(for: change, stored: nil, comparison: comparison, deletion: deletion, maxRecordBytes: maxRecordBytes)
            if case .problem = action { return action }
            return nil
        }
        // Only the last valid change of an id applies; the earlier ones changed nothing.
        var last: [String: Int] = [:]
        for (position, change) in batch.enumerated() where actions[position] == nil { last[change.id] = position }
        for (position, change) in batch.enumerated() {
            if let action = actions[position] {
                counts.add(action)
                continue
            }
            guard last[change.id] == position else {
                counts.add(.unchanged)
                continue
            }
            let action = MergePlan.action(for: change, stored: stored[change.id], comparison: comparison, deletion: deletion,
                                          maxRecordBytes: maxRecordBytes)
            actions[position] = action
            counts.add(action)
            switch (action, change) {
            case (.insert, .upsert(let record)), (.update, .upsert(let record)), (.resurrect, .upsert(let record)):
                stored[record.id] = MergePlan.Stored(version: record.version, deleted: false, body: record.body)
            case (.delete, _):
                stored[change.id] = nil
            case (.tombstone, _):
                stored[change.id]?.deleted = true
            default:
                break
            }
            if let operation = action.logged { log.append("\(operation) \(change.id)") }
        }
        return counts
    }
}
