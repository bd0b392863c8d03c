import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// The first sync's spool: what goes in comes out in the id index's order, every byte of it,
/// and merging through it leaves the replica as merging batch by batch in the remote's order.
@Suite("First sync merged in id order")
struct SortedSpoolTests {
    /// Ids that exercise the order: shared 8-byte prefixes (the sort's fast key), prefixes of
    /// one another, bytes above 0x7F, one byte long.
    static let awkwardIDs = ["abcdefgh", "abcdefgh1", "abcdefgh0", "abcdefg", "abcdefghzz", "é", "e", "z", "Z", "0", "a", "ab", "日本"]

    static func randomChanges(count: Int, ids: Int, seed: UInt64) -> [RecordChange] {
        var generator = SeededGenerator(seed: seed)
        return (0 ..< count).map { position in
            let number = Int.random(in: 0 ..< ids, using: &generator)
            let id = number < awkwardIDs.count ? awkwardIDs[number] : "id-\(number * 7919 % 100_003)"
            if Int.random(in: 0 ..< 10, using: &generator) == 0 { return .delete(id: id) }
            let fields: [String: String]? = Bool.random(using: &generator) ? nil : ["FN": "Name \(position)", "EMAIL": "\(id)@example.com"]
            let body = String(repeating: "x", count: Int.random(in: 0 ..< 300, using: &generator))
            return .upsert(RemoteRecord(id: id, version: "\(Int.random(in: 1 ..< 50, using: &generator))",
                                        body: Data("{\"n\":\(position),\"pad\":\"\(body)\"}".utf8), fields: fields))
        }
    }

    @Test func changesComeBackInTheIndexsOrder_equalIDsInArrivalOrder_theLastOfABatch_neverTwiceInAChunk() throws {
        let directory = try TemporaryDirectory()
        // Runs of 8 KiB: dozens of runs on disk and an arena, merged.
        let spool = SortedSpool(directory: directory.path, replicaPath: directory.path("replica.db"), store: "items", runBytes: 8 << 10)
        defer { spool.close() }
        let changes = Self.randomChanges(count: 3_000, ids: 700, seed: 11)
        for start in stride(from: 0, to: changes.count, by: 250) {
            try spool.add(changes[start ..< min(start + 250, changes.count)], batch: UInt32(start))
        }
        #expect(spool.runs.count > 10)
        #expect(spool.count == changes.count)

        let merge = try spool.merged()
        var out: [RecordChange] = []
        var superseded = 0
        while true {
            let chunk = try merge.next(limit: 100)
            superseded += chunk.superseded
            if chunk.changes.isEmpty { break }
            #expect(Set(chunk.changes.map(\.id)).count == chunk.changes.count, "a chunk holds an id twice")
            out += chunk.changes
        }
        // Within a batch (250 changes here) only the last change of an id counts; what SQLite's
        // BINARY collation orders is the UTF-8 bytes; a stable sort keeps arrival order.
        var lastInBatch: [String: Int] = [:]
        for (position, change) in changes.enumerated() { lastInBatch["\(position / 250) \(change.id)"] = position }
        let kept = changes.enumerated().filter { lastInBatch["\($0.offset / 250) \($0.element.id)"] == $0.offset }
        #expect(superseded == changes.count - kept.count)
        #expect(superseded > 0)
        let expected = kept.sorted { left, right in
            let a = Array(left.element.id.utf8), b = Array(right.element.id.utf8)
            return a != b ? a.lexicographicallyPrecedes(b) : left.offset < right.offset
        }.map(\.element)
        #expect(out == expected)
    }

    /// Two replicas with `definition` prepared, `direct.db` merged batch by batch and
    /// `spooled.db` through a spool.
    static func directAndSpooled(in directory: TemporaryDirectory, _ definition: StoreDefinition) throws
        -> (direct: ReplicaDatabase, spooled: ReplicaDatabase) {
        let direct = try ReplicaDatabase(path: directory.path("direct.db"))
        let spooled = try ReplicaDatabase(path: directory.path("spooled.db"))
        try direct.prepare(definition)
        try spooled.prepare(definition)
        return (direct, spooled)
    }

    /// Rows, counts and (in any order) change-log entries of a store merged through a spool
    /// equal those of merging the same batches one by one.
    static func expectMergedAlike(_ spooled: ReplicaDatabase, _ spooledCounts: MergeCounts,
                                  _ direct: ReplicaDatabase, _ directCounts: MergeCounts) throws {
        #expect(try spooled.rows(of: "items") == direct.rows(of: "items"))
        #expect(spooledCounts.inserted == directCounts.inserted)
        #expect(spooledCounts.updated == directCounts.updated)
        #expect(spooledCounts.deleted == directCounts.deleted)
        #expect(spooledCounts.unchanged == directCounts.unchanged)
        let log = { (replica: ReplicaDatabase) throws -> [String] in
            try replica.changes(after: 0, limit: 100_000).map { "\($0.operation) \($0.id)" }.sorted()
        }
        #expect(try log(spooled) == log(direct))
    }

    @Test func theSpoolFileIsGoneFromTheDirectoryFromTheStart() throws {
        let directory = try TemporaryDirectory()
        let spool = SortedSpool(directory: directory.path, replicaPath: directory.path("replica.db"), store: "items", runBytes: 1 << 10)
        try spool.add(Self.randomChanges(count: 200, ids: 100, seed: 3), batch: 0)
        #expect(!spool.runs.isEmpty)
        // Unlinked as soon as made: a crash leaves nothing to clean up.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
        spool.close()
    }

    @Test func aMissingDirectoryIsATypedErrorNamingTheReplica() throws {
        let directory = try TemporaryDirectory()
        let spool = SortedSpool(directory: directory.path("gone"), replicaPath: directory.path("gone/replica.db"), store: "items", runBytes: 1 << 10)
        defer { spool.close() }
        do {
            try spool.add(Self.randomChanges(count: 200, ids: 100, seed: 3), batch: 0)
            Issue.record("a spool in a missing directory was written")
        } catch {
            #expect(error.kind == .io)
            #expect(error.store == "items" && error.path.hasSuffix("gone/replica.db"))
            #expect(error.description.contains("spool"))
        }
    }

    /// The contract: rows, counts and the change log are those of merging the batches one by
    /// one as they arrived, whatever the runs, drains and repeated ids.
    @Test(arguments: [(VersionComparison.ordered, DeletionPolicy.hard), (.opaque, .hard), (.ordered, .tombstone)])
    func mergingThroughTheSpoolEqualsMergingBatchByBatch(_ comparison: VersionComparison, _ deletion: DeletionPolicy) throws {
        let directory = try TemporaryDirectory()
        let definition = StoreDefinition(name: "items", deletion: deletion, comparison: comparison)
        let (direct, spooled) = try SortedSpoolTests.directAndSpooled(in: directory, definition)
        defer {
            direct.close()
            spooled.close()
        }

        let changes = Self.randomChanges(count: 4_000, ids: 900, seed: 29)
        var batches: [ChangeBatch] = []
        for (number, start) in stride(from: 0, to: changes.count, by: 300).enumerated() {
            batches.append(ChangeBatch(changes: Array(changes[start ..< min(start + 300, changes.count)]), cursor: "page \(number)"))
        }
        var directCounts = MergeCounts()
        for batch in batches { directCounts += try direct.apply(batch, to: "items") }

        // Runs of 4 KiB and a drain every 40 KiB: several drains, each merging many runs.
        let first = SpooledFirstSync(replicaPath: directory.path("spooled.db"), store: "items", origin: "test", drainBytes: 40 << 10,
                                     runBytes: 4 << 10)
        defer { first.close() }
        var spooledCounts = MergeCounts()
        var drains = 0
        func apply(_ batch: ChangeBatch) throws(SyncError) {
            do throws(StoreError) { spooledCounts += try spooled.apply(batch, to: "items") } catch { throw SyncError(error, store: "items") }
        }
        for batch in batches {
            #expect(SpooledFirstSync.accepts(batch, maxRecordBytes: definition.maxRecordBytes))
            if try first.hold(batch) {
                try first.drain(apply)
                drains += 1
            }
        }
        try first.drain(apply)
        #expect(drains >= 3)
        #expect(first.isEmpty)

        try SortedSpoolTests.expectMergedAlike(spooled, spooledCounts, direct, directCounts)
        #expect(try spooled.syncState(of: "items")?.cursor == "page \(batches.count - 1)")
    }

    @Test func aDrainThatFailsIsNotStartedAgain_onlyTheFailureIsReported() throws {
        let directory = try TemporaryDirectory()
        let first = SpooledFirstSync(replicaPath: directory.path("replica.db"), store: "items", origin: "test", runBytes: 4 << 10)
        defer { first.close() }
        _ = try first.hold(ChangeBatch(changes: (0 ..< 25_000).map { record("id\($0)", version: "1") }, cursor: "end"))
        var chunks = 0
        func failSecond(_ batch: ChangeBatch) throws(SyncError) {
            chunks += 1
            if chunks == 2 { throw SyncError(StoreError(.full, path: "replica.db", message: "full"), store: "items") }
        }
        #expect(throws: SyncError.self) { try first.drain(failSecond) }
        #expect(chunks == 2)
        // Half merged: the pass's way out must not merge the same runs again.
        #expect(!first.mayDrain)
    }

    @Test func aBatchWithARecordTheMergeRefusesIsNotHeld() {
        let fine = ChangeBatch(changes: [record("a", version: "1")], cursor: nil)
        #expect(SpooledFirstSync.accepts(fine, maxRecordBytes: 100))
        let large = ChangeBatch(changes: [.upsert(RemoteRecord(id: "a", version: "1", body: Data(repeating: 0x61, count: 101)))], cursor: nil)
        #expect(!SpooledFirstSync.accepts(large, maxRecordBytes: 100))
        #expect(!SpooledFirstSync.accepts(ChangeBatch(changes: [.delete(id: "")], cursor: nil), maxRecordBytes: 100))
        let problem = ChangeBatch(changes: [record("a", version: "1")], cursor: nil, problems: [RecordProblem(position: 1, reason: "no id")])
        #expect(!SpooledFirstSync.accepts(problem, maxRecordBytes: 100))
    }
}
