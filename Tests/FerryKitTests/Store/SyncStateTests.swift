import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

@Suite("Replica sync state and change log")
struct SyncStateTests {
    /// The stored live-row count is exact whenever it is set: every transaction that changes
    /// how many rows are live clears it, and the next count stores it again.
    @Test(arguments: [DeletionPolicy.hard, .tombstone])
    func theStoredRecordCountIsExactOrAbsent(_ deletion: DeletionPolicy) throws {
        let directory = try TemporaryDirectory()
        let replica = try ReplicaDatabase(path: directory.path("replica.db"))
        defer { replica.close() }
        try replica.prepare(StoreDefinition(name: "s", deletion: deletion))
        func stored() throws -> Int64? {
            try replica.connection.scalarText("SELECT record_count FROM ferry_sync_state WHERE store = 's'").flatMap { Int64($0) }
        }
        var random = SeededGenerator(seed: 7)
        for round in 0..<40 {
            let changes: [RecordChange] = (0..<20).map { _ in
                let id = "r\(Int.random(in: 0..<60, using: &random))"
                return Int.random(in: 0..<3, using: &random) == 0 ? .delete(id: id) : record(id, version: "\(round)")
            }
            _ = try replica.apply(ChangeBatch(changes: changes, cursor: nil), to: "s")
            if round % 7 == 3 {
                // A sweep that keeps about half of the ids.
                try replica.beginReconciliation(of: "s")
                try replica.markPresent((0..<60).filter { _ in Bool.random(using: &random) }.map { "r\($0)" }, in: "s")
                _ = try replica.finishReconciliation(of: "s", maxDeleteShare: 1)
            }
            if let count = try stored() { #expect(Int(count) == (try replica.recordCount(of: "s")), "round \(round)") }
            if round % 3 == 0 {
                #expect(try replica.liveRecordCount(of: "s") == (try replica.recordCount(of: "s")))
                #expect(try stored() != nil)
            }
            #expect(try replica.syncState(of: "s")?.recordCount == (try replica.recordCount(of: "s")))
        }
    }

    /// `ferry push` failing (the remote down) and then succeeding: the store is no longer
    /// `failing`; a pull's failure stands until a pull succeeds. Local changes a push held or the
    /// remote refused are named in `incomplete` even without a pull's words.
    @Test func aPushThatSucceedsClearsAPushesFailure_notAPulls() throws {
        let directory = try TemporaryDirectory()
        let replica = try ReplicaDatabase(path: directory.path("replica.db"))
        defer { replica.close() }
        try replica.prepare(StoreDefinition(name: "s", writeBack: WriteBackConfiguration(push: true)))
        try replica.recordSuccess(of: "s", at: Date(timeIntervalSince1970: 100), counts: MergeCounts())
        func state() throws -> String { StoreStatus.state(of: try replica.syncState(of: "s")) }
        try replica.recordAttempt(of: "s", at: Date(timeIntervalSince1970: 200))
        _ = replica.recordingFailure(SyncError(.transport(.connection), store: "s", message: "remote down"), of: "s", byPush: true)
        #expect(try state() == "failing")
        try replica.recordAttempt(of: "s", at: Date(timeIntervalSince1970: 300))
        try replica.recordPushSucceeded(of: "s")
        #expect(try state() == "ok")

        try replica.recordAttempt(of: "s", at: Date(timeIntervalSince1970: 400))
        _ = replica.recordingFailure(SyncError(.httpStatus(500), store: "s", message: "listing failed"), of: "s")
        try replica.recordAttempt(of: "s", at: Date(timeIntervalSince1970: 500))
        try replica.recordPushSucceeded(of: "s")
        #expect(try state() == "failing", "a pull's failure stands")

        let held = SyncState(store: "s", lastAttempt: Date(timeIntervalSince1970: 600), lastSuccess: Date(timeIntervalSince1970: 600))
        var withConflict = held
        withConflict.openConflicts = 1
        let row = StoreStatus.collect(configuration: nil, states: [withConflict], now: Date(timeIntervalSince1970: 700))[0]
        #expect(row.state == "incomplete")
        #expect(row.incomplete == "1 local change held in conflict (ferry conflicts)")
    }

    @Test func attemptSuccessFailureAndReset() throws {
        let directory = try TemporaryDirectory()
        let replica = try ReplicaDatabase(path: directory.path("replica.db"))
        try replica.prepare(StoreDefinition(name: "b_store"))
        try replica.prepare(StoreDefinition(name: "a_store"))
        #expect(try replica.syncState(of: "a_store") == SyncState(store: "a_store"))
        #expect(try replica.syncState(of: "never") == nil)

        let t1 = Date(timeIntervalSince1970: 1_700_000_000)
        let t2 = t1.addingTimeInterval(60)
        try replica.recordAttempt(of: "a_store", at: t1)
        let counts = try replica.apply(ChangeBatch(changes: [record("x", version: "1"), record("y", version: "1")], cursor: "p2"), to: "a_store")
        try replica.recordFailure(of: "a_store", at: t1, message: "HTTP 500 from https://example.org/")
        #expect(try replica.syncState(of: "a_store")?.lastError == "HTTP 500 from https://example.org/")
        try replica.recordSuccess(of: "a_store", at: t2, counts: counts)
        try replica.recordSuccess(of: "a_store", at: t2, counts: MergeCounts(updated: 3, deleted: 1))

        let state = try #require(try replica.syncState(of: "a_store"))
        #expect(state == SyncState(store: "a_store", cursor: "p2", lastAttempt: t1, lastSuccess: t2, lastError: nil, recordCount: 2, totalInserted: 2, totalUpdated: 3, totalDeleted: 1))
        #expect(try replica.syncStates().map(\.store) == ["a_store", "b_store"])

        try replica.resetCursor(of: "a_store")
        #expect(try replica.syncState(of: "a_store")?.cursor == nil)
        expectStoreError(.other) { try replica.recordAttempt(of: "unprepared", at: t1) }
    }

    @Test func changeLogPagingAndPruning() throws {
        let directory = try TemporaryDirectory()
        let replica = try ReplicaDatabase(path: directory.path("replica.db"))
        try replica.prepare(StoreDefinition(name: "items"))
        _ = try replica.apply(ChangeBatch(changes: (0..<10).map { record("r\($0)", version: "1") }, cursor: nil), to: "items")
        let page1 = try replica.changes(after: 0, limit: 4)
        let page2 = try replica.changes(after: page1.last!.sequence, limit: 100)
        #expect(page1.count == 4)
        #expect(page2.count == 6)
        #expect((page1 + page2).map(\.sequence) == Array(1...10))
        #expect(page1.first?.store == "items")

        // Everything is older than "now + 1h": keep only the newest 3.
        #expect(try replica.pruneChangeLog(keepingNewerThan: Date().addingTimeInterval(3600), keepingAtLeast: 3) == 7)
        #expect(try replica.changes(after: 0, limit: 100).map(\.sequence) == [8, 9, 10])
        // Nothing is older than an hour ago.
        #expect(try replica.pruneChangeLog(keepingNewerThan: Date().addingTimeInterval(-3600), keepingAtLeast: 0) == 0)
        #expect(try replica.pruneChangeLog(keepingNewerThan: nil, keepingAtLeast: 1) == 2)
        // Sequences are never reused after pruning.
        _ = try replica.apply(ChangeBatch(changes: [record("new", version: "1")], cursor: nil), to: "items")
        #expect(try replica.changes(after: 0, limit: 100).map(\.sequence) == [10, 11])
        // JSON for `ferry changes --json`.
        let entry = try replica.changes(after: 10, limit: 1)[0]
        #expect(try JSONDecoder().decode(ChangeLogEntry.self, from: JSONEncoder().encode(entry)) == entry)
    }

    /// The log has no AUTOINCREMENT since schema v3; the floor pruning records must keep
    /// sequences from being handed out again even when every entry is gone, across stores,
    /// reopening, and the reconciliation sweep (which writes its own log rows).
    @Test func sequencesAreNeverReusedAfterPruningEverything() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("replica.db")
        var replica = try ReplicaDatabase(path: path)
        try replica.prepare(StoreDefinition(name: "items"))
        try replica.prepare(StoreDefinition(name: "other"))
        _ = try replica.apply(ChangeBatch(changes: (0..<5).map { record("r\($0)", version: "1") }, cursor: nil), to: "items")
        #expect(try replica.pruneChangeLog(keepingNewerThan: nil, keepingAtLeast: 0) == 5)
        #expect(try replica.changeLogCount() == 0)

        _ = try replica.apply(ChangeBatch(changes: [record("o1", version: "1")], cursor: nil), to: "other")
        #expect(try replica.changes(after: 0, limit: 10).map(\.sequence) == [6])
        #expect(try replica.pruneChangeLog(keepingNewerThan: nil, keepingAtLeast: 0) == 1)
        replica.close()

        // The floor is in the file, not in memory.
        replica = try ReplicaDatabase(path: path)
        try replica.prepare(StoreDefinition(name: "items"))
        try replica.beginReconciliation(of: "items")
        try replica.markPresent(["r0", "r1", "r2"], in: "items")
        #expect(try replica.finishReconciliation(of: "items", maxDeleteShare: 1) == .swept(deleted: 2))
        _ = try replica.apply(ChangeBatch(changes: [record("r0", version: "2"), .delete(id: "r2")], cursor: nil), to: "items")
        let log = try replica.changes(after: 0, limit: 10)
        #expect(log.map(\.sequence) == [7, 8, 9, 10])
        #expect(log.map(\.id) == ["r3", "r4", "r0", "r2"])
        #expect(log.map(\.operation) == ["delete", "delete", "update", "delete"])
        #expect(Set(log.map(\.store)) == ["items"])
        replica.close()
    }

    /// A batch after pruning everything starts at the floor even when its first log write is a
    /// full multi-row statement (the other rows' sequences come from SQLite's max + 1).
    @Test func wideLogWritesAfterPruningEverythingContinueAboveTheFloor() throws {
        let directory = try TemporaryDirectory()
        let replica = try ReplicaDatabase(path: directory.path("replica.db"))
        try replica.prepare(StoreDefinition(name: "items"))
        _ = try replica.apply(ChangeBatch(changes: (0..<100).map { record("a\($0)", version: "1") }, cursor: nil), to: "items")
        #expect(try replica.pruneChangeLog(keepingNewerThan: nil, keepingAtLeast: 0) == 100)
        _ = try replica.apply(ChangeBatch(changes: (0..<150).map { record("b\($0)", version: "1") }, cursor: nil), to: "items")
        _ = try replica.apply(ChangeBatch(changes: (0..<70).map { record("c\($0)", version: "1") }, cursor: nil), to: "items")
        let log = try replica.changes(after: 0, limit: 1000)
        #expect(log.map(\.sequence) == Array(101...320).map(Int64.init))
        #expect(log.map(\.id) == (0..<150).map { "b\($0)" } + (0..<70).map { "c\($0)" })
        replica.close()
    }

    /// Log entries are bound from one buffer of ids laid back to back: ids of every length,
    /// non-ASCII ones among them, on both sides of a full multi-row statement, come back byte
    /// for byte, in the batch's order, as the table holds them.
    @Test func theLogKeepsEveryIdExactlyAcrossWideAndSingleWrites() throws {
        let directory = try TemporaryDirectory()
        let replica = try ReplicaDatabase(path: directory.path("replica.db"))
        try replica.prepare(StoreDefinition(name: "items"))
        let ids = (0..<150).map { index in
            String(repeating: ["a", "é", "日", "🚀"][index % 4], count: index % 37 + 1) + "-\(index)"
        }
        _ = try replica.apply(ChangeBatch(changes: ids.map { record($0, version: "1") }, cursor: nil), to: "items")
        _ = try replica.apply(ChangeBatch(changes: ids.prefix(70).map { record($0, version: "2") } + [.delete(id: ids[149])], cursor: nil), to: "items")
        let log = try replica.changes(after: 0, limit: 1000)
        #expect(log.map(\.id) == ids + ids.prefix(70) + [ids[149]])
        #expect(log.map(\.operation) == Array(repeating: "insert", count: 150) + Array(repeating: "update", count: 70) + ["delete"])
        let stored = try replica.connection.textRows("SELECT id FROM items ORDER BY rowid")
        #expect(stored == Array(ids.prefix(149)))
        replica.close()
    }

    @Test func bulkModeTunesAndRestoresPragmas() throws {
        let directory = try TemporaryDirectory()
        let replica = try ReplicaDatabase(path: directory.path("replica.db"))
        let cache = try replica.connection.scalarInt("PRAGMA cache_size")
        let checkpoint = try replica.connection.scalarInt("PRAGMA wal_autocheckpoint")
        try replica.setBulkMode(true)
        #expect(try replica.connection.scalarInt("PRAGMA cache_size") == -65_536)
        // A checkpointer copies the WAL beside the writer: the writer's own automatic
        // checkpoint is replaced by its commit hook (SQLite then reports 0).
        #expect(replica.checkpointer != nil)
        #expect(try replica.connection.scalarInt("PRAGMA wal_autocheckpoint") == 0)
        try replica.setBulkMode(true)
        try replica.setBulkMode(false)
        #expect(try replica.connection.scalarInt("PRAGMA cache_size") == cache)
        #expect(try replica.connection.scalarInt("PRAGMA wal_autocheckpoint") == checkpoint)
        #expect(replica.checkpointer == nil)
    }
}

@Suite("Change log pruning in steps")
struct ChangeLogPruningTests {
    @Test func aLimitPrunesTheOldestInStepsAndNeverReusesASequence() throws {
        let directory = try TemporaryDirectory()
        let replica = try ReplicaDatabase(path: directory.path("replica.db"))
        defer { replica.close() }
        try replica.prepare(StoreDefinition(name: "items"))
        _ = try replica.apply(ChangeBatch(changes: (0..<250).map { record("r\($0)", version: "1") }, cursor: nil), to: "items")
        var steps: [Int] = []
        while true {
            let deleted = try replica.pruneChangeLog(keepingNewerThan: Date().addingTimeInterval(3600), keepingAtLeast: 0, limit: 100)
            steps.append(deleted)
            if deleted < 100 { break }
        }
        #expect(steps == [100, 100, 50])
        #expect(try replica.changes(after: 0, limit: 1000).isEmpty)
        _ = try replica.apply(ChangeBatch(changes: [record("new", version: "1")], cursor: nil), to: "items")
        #expect(try replica.changes(after: 0, limit: 10).map(\.sequence) == [251])
    }
}

/// `ferry status --check`: a failing store exits 1, one otherwise not ok 2, all ok 0.
@Suite("ferry status --check")
struct StatusCheckTests {
    @Test func theExitCodeFollowsTheWorstState() {
        let now = Date(timeIntervalSince1970: 1000)
        let ok = SyncState(store: "a", lastAttempt: now, lastSuccess: now)
        var incomplete = SyncState(store: "b", lastAttempt: now, lastSuccess: now)
        incomplete.openConflicts = 1
        let failing = SyncState(store: "c", lastAttempt: now, lastSuccess: Date(timeIntervalSince1970: 10), lastError: "down")
        func code(_ states: [SyncState]) -> FerryExitCode { StoreStatus.checkExitCode(StoreStatus.collect(configuration: nil, states: states, now: now)) }
        #expect(code([ok]) == .success)
        #expect(code([ok, incomplete]) == .incomplete)
        #expect(code([ok, incomplete, failing]) == .failure)
        #expect(code([]) == .success)
    }
}
