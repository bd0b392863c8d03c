import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// A pull that meets a record with a queued local change follows ``ConflictPlan``: nothing is
/// overwritten silently, and both sides of a conflict are kept in `ferry_conflicts`.
@Suite("A pull meets a local change")
struct MergeMeetsLocalChangeTests {
    static func replica(_ directory: TemporaryDirectory, policy: ConflictPolicy) throws -> ReplicaDatabase {
        let replica = try ReplicaDatabase(path: directory.path("replica.db"))
        try replica.prepare(StoreDefinition(name: "quotes", writeBack: WriteBackConfiguration(push: true, conflict: policy)))
        _ = try replica.apply(ChangeBatch(changes: (0..<3).map { record("q\($0)", version: "1") }, cursor: "c1"), to: "quotes")
        try writeAsAnotherProgram(directory, #"UPDATE quotes SET body = '{"id":"q0","value":"local"}' WHERE id = 'q0'"#)
        return replica
    }

    /// A local write through a connection of its own, triggers on, as any other program's.
    static func writeAsAnotherProgram(_ directory: TemporaryDirectory, _ sql: String) throws {
        let other = try SQLiteConnection(path: directory.path("replica.db"), mode: .readWrite)
        defer { other.close() }
        try other.execute(sql)
    }

    static func state(_ replica: ReplicaDatabase) throws -> String {
        try replica.connection.scalarText("SELECT group_concat(id || ':' || op || ':' || state || ':' || coalesce(base_version, '-'), ' ') FROM ferry_outbox") ?? ""
    }

    @Test func aRemoteChangeOfTheBaseVersionIsNoNews() throws {
        let directory = try TemporaryDirectory()
        let replica = try Self.replica(directory, policy: .hold)
        defer { replica.close() }
        let counts = try replica.apply(ChangeBatch(changes: [record("q0", version: "1", "replayed")], cursor: "c2"), to: "quotes")
        #expect(counts.conflicts == 0)
        #expect(try replica.body(of: "q0", in: "quotes")?.contains("local") == true)
        #expect(try Self.state(replica) == "q0:2:0:1")
    }

    @Test(arguments: ConflictPolicy.allCases)
    func aNewerRemoteVersionIsAConflict(_ policy: ConflictPolicy) throws {
        let directory = try TemporaryDirectory()
        let replica = try Self.replica(directory, policy: policy)
        defer { replica.close() }
        let counts = try replica.apply(ChangeBatch(changes: [record("q0", version: "2", "remote")], cursor: "c2"), to: "quotes")
        #expect(counts.conflicts == 1)
        let conflict = try #require(try replica.conflicts(of: "quotes", all: true).first)
        #expect(conflict.localBody?.contains("local") == true)
        #expect(conflict.remoteBody?.contains("remote") == true)
        #expect(conflict.remoteVersion == "2")
        let row = try replica.body(of: "q0", in: "quotes") ?? ""
        switch policy {
        case .hold:
            #expect(row.contains("local"))
            #expect(try Self.state(replica) == "q0:2:2:1")
            #expect(conflict.resolution == nil)
            #expect(try replica.syncState(of: "quotes")?.openConflicts == 1)
            try replica.recordSuccess(of: "quotes", at: Date(), counts: MergeCounts())
            #expect(StoreStatus.state(of: try replica.syncState(of: "quotes")) == "incomplete")
            // A person keeps the remote version (what `ferry conflicts resolve --keep remote` does).
            _ = try replica.chooseResolution(.takeRemote, conflict: conflict.conflictID)
            #expect(try replica.applyResolutions(of: "quotes", at: Date()) == 1)
            #expect(try replica.body(of: "q0", in: "quotes")?.contains("remote") == true)
            #expect(try Self.state(replica) == "")
            #expect(try replica.syncState(of: "quotes")?.openConflicts == 0)
        case .remoteWins:
            #expect(row.contains("remote"))
            #expect(try Self.state(replica) == "")
            #expect(conflict.resolution == "remote")
        case .localWins:
            #expect(row.contains("local"))
            #expect(try Self.state(replica) == "q0:2:0:2", "rebased on the remote version, pushed over it conditionally")
        case .keepBoth:
            #expect(row.contains("remote"))
            let copy = try #require(try replica.connection.scalarText("SELECT id FROM quotes WHERE body LIKE '%local%'"))
            #expect(copy.hasPrefix("local-"))
            #expect(try Self.state(replica) == "\(copy):1:0:-")
        }
    }

    @Test func aSweepThatNoLongerListsARecordChangedHereIsAConflict_andLocalCreatesAreNotSwept() throws {
        let directory = try TemporaryDirectory()
        let replica = try Self.replica(directory, policy: .hold)
        defer { replica.close() }
        try Self.writeAsAnotherProgram(directory, #"INSERT INTO quotes(body) VALUES ('{"new":true}')"#)
        try replica.beginReconciliation(of: "quotes")
        try replica.markPresent(["q1", "q2"], in: "quotes")
        let outcome = try replica.finishReconciliation(of: "quotes", maxDeleteShare: 1)
        #expect(outcome == .swept(deleted: 0))
        #expect(try replica.connection.scalarInt("SELECT count(*) FROM quotes WHERE body LIKE '%\"new\"%'") == 1)
        let conflict = try #require(try replica.conflicts(of: "quotes").first)
        #expect(conflict.id == "q0")
        #expect(conflict.remoteBody == nil)
        #expect(try replica.body(of: "q0", in: "quotes")?.contains("local") == true)
    }

    @Test func aRefusedSweepSaysNothingOfRecordsChangedHere() throws {
        let directory = try TemporaryDirectory()
        let replica = try Self.replica(directory, policy: .remoteWins)
        defer { replica.close() }
        // A listing that lost q0 (changed here) and q1: too much to trust.
        try replica.beginReconciliation(of: "quotes")
        try replica.markPresent(["q2"], in: "quotes")
        let outcome = try replica.finishReconciliation(of: "quotes", maxDeleteShare: 0.3)
        #expect(outcome == .refused(wouldDelete: 1, of: 3))
        #expect(try replica.conflicts(of: "quotes", all: true).isEmpty, "no remote deletion is taken from a refused listing")
        #expect(try replica.body(of: "q0", in: "quotes")?.contains("local") == true)
        #expect(try Self.state(replica) == "q0:2:0:1")
    }

    @Test func aPushAnsweredWhileANewerLocalWriteArrivedKeepsTheNewerWrite() throws {
        let directory = try TemporaryDirectory()
        let replica = try Self.replica(directory, policy: .hold)
        defer { replica.close() }
        let sent = try #require(try replica.queuedLocalChanges(of: "quotes").first)
        try Self.writeAsAnotherProgram(directory, #"UPDATE quotes SET body = '{"id":"q0","value":"newer"}' WHERE id = 'q0'"#)
        try replica.recordPush(sent, result: .accepted(RemoteRecord(id: "q0", version: "2", body: Data(#"{"id":"q0","value":"local"}"#.utf8))), of: "quotes", at: Date())
        #expect(try replica.body(of: "q0", in: "quotes")?.contains("newer") == true)
        #expect(try Self.state(replica) == "q0:2:0:2", "still queued, based on what the push made")
        #expect(try replica.changes(after: 0, limit: 100).last.map { "\($0.origin) \($0.operation) \($0.id)" } == "local update q0")
    }

    @Test func aCreateAnsweredAfterAPullAlreadyMadeItsRowIsOneRow() throws {
        let directory = try TemporaryDirectory()
        let replica = try Self.replica(directory, policy: .hold)
        defer { replica.close() }
        try Self.writeAsAnotherProgram(directory, #"INSERT INTO quotes(body) VALUES ('{"made":"here"}')"#)
        let create = try #require(try replica.queuedLocalChanges(of: "quotes").first { $0.operation == .create })
        // The remote stored it before a crash, and a pull brought it in under the remote's id.
        _ = try replica.apply(ChangeBatch(changes: [record("q7", version: "1", "here")], cursor: "c2"), to: "quotes")
        try replica.recordPush(create, result: .accepted(RemoteRecord(id: "q7", version: "1", body: Data(#"{"made":"here"}"#.utf8))), of: "quotes", at: Date())
        #expect(try replica.rows(of: "quotes").keys.sorted() == ["q0", "q1", "q2", "q7"])
        #expect(try replica.body(of: "q7", in: "quotes") == #"{"made":"here"}"#)
        #expect(try Self.state(replica) == "q0:2:0:1")
    }

    @Test func aRowDeletedWhileItsCreateWasInFlightIsPushedAsADeleteOfWhatTheRemoteMade() throws {
        let directory = try TemporaryDirectory()
        let replica = try Self.replica(directory, policy: .hold)
        defer { replica.close() }
        let other = try SQLiteConnection(path: directory.path("replica.db"), mode: .readWrite)
        try other.execute(#"INSERT INTO quotes(body) VALUES ('{"made":"here"}')"#)
        let create = try #require(try replica.queuedLocalChanges(of: "quotes").first { $0.operation == .create })
        try replica.noteCreateSent(create, body: #"{"made":"here"}"#, of: "quotes", at: Date())
        try other.execute("DELETE FROM quotes WHERE id = \(literal(create.id))")
        other.close()
        let logBefore = try replica.changeLogCount()
        try replica.recordPush(create, result: .accepted(RemoteRecord(id: "r1", version: "5", body: Data(#"{"made":"here"}"#.utf8))), of: "quotes", at: Date())
        #expect(try replica.body(of: "r1", in: "quotes") == nil)
        #expect(try Self.state(replica) == "q0:2:0:1 r1:3:0:5", "the remote's record is deleted next")
        #expect(try replica.changeLogCount() == logBefore + 1, "the remote has it: logged, and its delete is logged when pushed")
    }

    @Test func aRecordDeletedOnBothSidesIsLoggedAsDeleted() throws {
        let directory = try TemporaryDirectory()
        let replica = try Self.replica(directory, policy: .hold)
        defer { replica.close() }
        try Self.writeAsAnotherProgram(directory, "DELETE FROM quotes WHERE id = 'q1'")
        _ = try replica.apply(ChangeBatch(changes: [.delete(id: "q1")], cursor: "c2"), to: "quotes")
        #expect(try Self.state(replica) == "q0:2:0:1")
        #expect(try replica.changes(after: 0, limit: 100).last.map { "\($0.operation) \($0.id)" } == "delete q1")
    }

    @Test func aHeldDeleteThatTheRemoteDeletesTooClosesItsConflict() throws {
        let directory = try TemporaryDirectory()
        let replica = try Self.replica(directory, policy: .hold)
        defer { replica.close() }
        try Self.writeAsAnotherProgram(directory, "DELETE FROM quotes WHERE id = 'q1'")
        // The remote updated q1 meanwhile: a conflict, held.
        _ = try replica.apply(ChangeBatch(changes: [record("q1", version: "2", "remote")], cursor: "c2"), to: "quotes")
        #expect(try replica.conflicts(of: "quotes").map(\.id) == ["q1"])
        // Then the remote deleted it as well: nothing is left to decide.
        _ = try replica.apply(ChangeBatch(changes: [.delete(id: "q1")], cursor: "c3"), to: "quotes")
        #expect(try Self.state(replica) == "q0:2:0:1")
        #expect(try replica.conflicts(of: "quotes").isEmpty, "no open conflict without its held change")
        let closed = try #require(try replica.conflicts(of: "quotes", all: true).first { $0.id == "q1" })
        #expect(closed.resolution == "remote")
        #expect(closed.resolved != nil)
        #expect(try replica.syncState(of: "quotes")?.openConflicts == 0)
    }

    @Test func aCreateDeletedAfterThePushReadTheQueueIsNotSent() throws {
        let directory = try TemporaryDirectory()
        let replica = try Self.replica(directory, policy: .hold)
        defer { replica.close() }
        let other = try SQLiteConnection(path: directory.path("replica.db"), mode: .readWrite)
        try other.execute(#"INSERT INTO quotes(body) VALUES ('{"brief":"life"}')"#)
        let create = try #require(try replica.queuedLocalChanges(of: "quotes").first { $0.operation == .create })
        try other.execute("DELETE FROM quotes WHERE id = \(literal(create.id))")
        other.close()
        #expect(try replica.noteCreateSent(create, body: #"{"brief":"life"}"#, of: "quotes", at: Date()) == false,
                "no longer queued: the writer must not send it")
    }
}
