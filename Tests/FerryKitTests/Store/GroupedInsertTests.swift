import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// Runs of new records are inserted sixteen rows per statement; a group that meets a stored id
/// changes nothing and its records are merged one by one, so rows, counts and the change log
/// are those of merging record by record.
@Suite("Grouped inserts of new records")
struct GroupedInsertTests {
    /// 100 changes: new ids, ids stored before (older, newer, tombstoned), a duplicate within
    /// the batch and a delete, spread so that some groups of sixteen are clean and some are not.
    static func mixedBatch() -> ChangeBatch {
        var changes: [RecordChange] = (0 ..< 100).map { record(String(format: "new%03d", $0), version: "2") }
        changes[20] = record("old-stale", version: "2")      // stored at 1: an update
        changes[37] = record("old-newer", version: "2")      // stored at 5: unchanged
        changes[55] = record("old-gone", version: "3")       // a tombstone: resurrected
        changes[70] = .delete(id: "old-stale")
        changes[71] = record("new071", version: "1")         // superseded by the next change
        changes[72] = record("new071", version: "4")
        return ChangeBatch(changes: changes, cursor: "end")
    }

    static func prepared(_ directory: TemporaryDirectory, _ name: String) throws -> ReplicaDatabase {
        let replica = try ReplicaDatabase(path: directory.path(name))
        try replica.prepare(StoreDefinition(name: "items", deletion: .tombstone))
        _ = try replica.apply(ChangeBatch(changes: [record("old-stale", version: "1"), record("old-newer", version: "5"),
                                                    record("old-gone", version: "1")], cursor: nil), to: "items")
        _ = try replica.apply(ChangeBatch(changes: [.delete(id: "old-gone")], cursor: nil), to: "items")
        return replica
    }

    @Test func groupsGiveTheRowsCountsAndLogOfMergingRecordByRecord() throws {
        let directory = try TemporaryDirectory()
        let grouped = try Self.prepared(directory, "grouped.db")
        let single = try Self.prepared(directory, "single.db")
        defer {
            grouped.close()
            single.close()
        }
        grouped.stores["items"]?.probe = .insert
        let groupedCounts = try grouped.apply(Self.mixedBatch(), to: "items")
        #expect(grouped.stores["items"]?.groupedInsert != nil, "no group was tried")
        // Read-first decides every record on its own: the reference.
        single.stores["items"]?.probe = .read
        let singleCounts = try single.apply(Self.mixedBatch(), to: "items")
        #expect(single.stores["items"]?.groupedInsert == nil)

        #expect(groupedCounts == singleCounts)
        // 95 new ids and the resurrected tombstone.
        #expect(groupedCounts.inserted == 96)
        #expect(try grouped.rows(of: "items") == single.rows(of: "items"))
        let log = { (replica: ReplicaDatabase) throws -> [String] in
            try replica.changes(after: 0, limit: 1_000).map { "\($0.operation) \($0.id)" }
        }
        #expect(try log(grouped) == log(single))
        #expect(try grouped.syncState(of: "items")?.cursor == "end")
        #expect(try grouped.body(of: "new000", in: "items") == single.body(of: "new000", in: "items"))
    }

    @Test func aGroupMeetingAStoredIDWritesNothing() throws {
        let directory = try TemporaryDirectory()
        let replica = try Self.prepared(directory, "replica.db")
        defer { replica.close() }
        let group = try GroupedInsert(table: "items", connection: replica.connection)
        let records = (0 ..< GroupedInsert.width).map { row in
            RemoteRecord(id: row == 9 ? "old-newer" : "g\(row)", version: "1", body: Data("{\"row\":\(row)}".utf8))
        }
        #expect(try !group.insert(at: 1) { records[$0] })
        #expect(try replica.rows(of: "items").keys.sorted() == ["old-gone", "old-newer", "old-stale"])
        let fresh = (0 ..< GroupedInsert.width).map { RemoteRecord(id: "h\($0)", version: "1", body: Data("{}".utf8)) }
        #expect(try group.insert(at: 1) { fresh[$0] })
        #expect(try replica.rows(of: "items").count == 3 + GroupedInsert.width)
    }
}
