import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// A spool merged on a thread of its own gives exactly what the merge gives inline, and lets
/// go of the spool whenever it is told to.
@Suite("Spool merge read ahead")
struct MergeReadAheadTests {
    /// A spool of many runs on disk and an arena, with repeated ids within and across batches.
    static func filledSpool(in directory: TemporaryDirectory) throws -> SortedSpool {
        let spool = SortedSpool(directory: directory.path, replicaPath: directory.path("replica.db"), store: "items", runBytes: 8 << 10)
        let changes = SortedSpoolTests.randomChanges(count: 5_000, ids: 1_200, seed: 41)
        for start in stride(from: 0, to: changes.count, by: 250) {
            try spool.add(changes[start ..< min(start + 250, changes.count)], batch: UInt32(start))
        }
        return spool
    }

    @Test func chunksAreThoseOfTheMergeInline_inOrder_withTheSupersededCounted() throws {
        let directory = try TemporaryDirectory()
        let spool = try Self.filledSpool(in: directory)
        defer { spool.close() }
        #expect(spool.runs.count > 10)

        var inline: [MergeReadAhead.Chunk] = []
        let merge = try spool.merged(keeping: true)
        while true {
            let chunk = try merge.next(limit: 97)
            inline.append(chunk)
            if chunk.changes.isEmpty { break }
        }

        let ahead = MergeReadAhead(try spool.merged(), limit: 97)
        defer { ahead.finish() }
        var read: [MergeReadAhead.Chunk] = []
        while true {
            let chunk = try ahead.next()
            read.append(chunk)
            if chunk.changes.isEmpty { break }
        }
        #expect(read.count == inline.count)
        #expect(read.map(\.changes) == inline.map(\.changes))
        #expect(read.map(\.superseded) == inline.map(\.superseded))
        #expect(inline.reduce(0) { $0 + $1.superseded } > 0)
        // Over: it keeps saying so.
        #expect(try ahead.next().changes.isEmpty)
    }

    @Test func finishingEarlyStopsTheReading_theSpoolCanThenBeReset() throws {
        let directory = try TemporaryDirectory()
        let spool = try Self.filledSpool(in: directory)
        defer { spool.close() }
        let ahead = MergeReadAhead(try spool.merged(), limit: 10)
        let first = try ahead.next().changes
        #expect(!first.isEmpty && first.count <= 10)
        // The thread waits with its chunks ready; finish returns once it has stopped.
        ahead.finish()
        ahead.finish()
        try spool.reset()
        #expect(spool.isEmpty)
    }

    /// A drain large enough to read ahead: rows, counts and change log as merging batch by batch.
    @Test func aDrainReadAheadMergesAsBatchByBatch() throws {
        let directory = try TemporaryDirectory()
        let definition = StoreDefinition(name: "items")
        let (direct, spooled) = try SortedSpoolTests.directAndSpooled(in: directory, definition)
        defer {
            direct.close()
            spooled.close()
        }
        let changes = SortedSpoolTests.randomChanges(count: 30_000, ids: 9_000, seed: 53)
        let batches = stride(from: 0, to: changes.count, by: 1_000).map { start in
            ChangeBatch(changes: Array(changes[start ..< min(start + 1_000, changes.count)]), cursor: "at \(start)")
        }
        var directCounts = MergeCounts()
        for batch in batches { directCounts += try direct.apply(batch, to: "items") }

        let first = SpooledFirstSync(replicaPath: directory.path("spooled.db"), store: "items", origin: "test", runBytes: 64 << 10)
        defer { first.close() }
        for batch in batches { _ = try first.hold(batch) }
        #expect(first.heldRecords > SpooledFirstSync.chunkSize)
        var spooledCounts = MergeCounts()
        var chunks = 0
        try first.drain { (batch: ChangeBatch) throws(SyncError) in
            chunks += 1
            do throws(StoreError) { spooledCounts += try spooled.apply(batch, to: "items") } catch { throw SyncError(error, store: "items") }
        }
        #expect(chunks > 1)
        try SortedSpoolTests.expectMergedAlike(spooled, spooledCounts, direct, directCounts)
        #expect(try spooled.syncState(of: "items")?.cursor == "at 29000")
    }
}
