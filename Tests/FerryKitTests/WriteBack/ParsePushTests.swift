import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// Local SQL writes pushed to the Parse test server by real passes: creates, updates and
/// deletes arrive, the next pull neither downloads nor reports them again, counters add up,
/// conflicts follow the store's policy, refusals wait with their reason, and a create sent
/// before a crash is found, not made twice.
@Suite("Pushing to Parse", .serialized)
struct ParsePushTests {
    struct Setup {
        let server: ParseTestServer
        let directory: TemporaryDirectory
        let database: SharedDatabase
        let store: StoreConfiguration

        func pass(pull: Bool = true) throws -> PassReport {
            try ParsePushTests.run(store, database, pull: pull).get()
        }

        /// Another program's connection to the replica (triggers on, as every client has).
        func client() throws -> SQLiteConnection {
            try SQLiteConnection(path: directory.path("replica.db"), mode: .readWrite)
        }

        func remote() throws -> [String: [String: Any]] {
            Dictionary(uniqueKeysWithValues: try server.dump().map { ($0["objectId"] as! String, $0) })
        }

        /// A write through Parse's own API, as another app would make it.
        @discardableResult
        func parse(_ method: String, _ path: String, _ body: String? = nil) throws -> Data {
            var arguments = ["-sS", "-f", "-X", method, "-H", "X-Parse-Application-Id: ferry-test", "-H", "X-Parse-REST-API-Key: rest-secret"]
            if body != nil { arguments += ["-H", "Content-Type: application/json", "--data-binary", "@-"] }
            return try Shell.run("/usr/bin/curl", arguments + [server.mount + path], input: body.map { Data($0.utf8) })
        }

        /// The oldest queued local change.
        func firstQueued() throws -> LocalChange {
            try #require(try database.write { try $0.queuedLocalChanges(of: "quotes") }.first)
        }

        /// Records `change` as sent with `body` (and the objectId it chose), as a push killed
        /// after sending it leaves it.
        func noteSent(_ change: LocalChange, _ body: String, remoteID: String? = nil, at date: Date = Date()) throws {
            _ = try database.write { try $0.noteCreateSent(change, body: body, remoteID: remoteID, of: "quotes", at: date) }
        }

        func outbox() throws -> ReplicaDatabase.OutboxSummary {
            try database.write { try $0.outboxSummary(of: "quotes") }
        }
    }

    static func run(_ store: StoreConfiguration, _ database: SharedDatabase, pull: Bool = true) throws -> Result<PassReport, SyncError> {
        try PassRun.run(store, database, reconcile: true, pull: pull)
    }

    static func setUp(objects: Int = 5, conflict: ConflictPolicy = .hold, clientIDs: Bool = false) throws -> Setup {
        let server = try ParseTestServer.start(arguments: clientIDs ? ["--allow-custom-object-id"] : [])
        try server.admin("seed", ["class": "Quote", "count": objects, "seed": 7])
        let directory = try TemporaryDirectory()
        let database = try SharedDatabase(path: directory.path("replica.db"))
        var store = server.store(pageSize: 100)
        if clientIDs, var options = store.options.as(ParseOptions.self) {
            options.objectIDs = .client
            store.options = AnyStoreOptions(options)
        }
        store.writeBack = WriteBackConfiguration(push: true, conflict: conflict)
        let setup = Setup(server: server, directory: directory, database: database, store: store)
        _ = try setup.pass()
        return setup
    }

    @Test func createUpdateAndDeleteArrive_andTheNextPullReportsNothing() throws {
        let setup = try Self.setUp()
        defer { setup.database.close() }
        let ids = try setup.remote().keys.sorted()
        let other = try setup.client()
        defer { other.close() }
        try other.execute(#"INSERT INTO quotes(body) VALUES ('{"text":"made here","n":1}')"#)
        try other.execute("UPDATE quotes SET body = json_set(body, '$.text', 'edited here') WHERE id = '\(ids[0])'")
        try other.execute("DELETE FROM quotes WHERE id = '\(ids[1])'")

        let pushed = try setup.pass()
        #expect(pushed.push.pushed == 3)
        #expect(pushed.counts.inserted + pushed.counts.updated + pushed.counts.deleted == 0, "the pull after the push found nothing new: \(pushed.summary)")
        let remote = try setup.remote()
        #expect(remote[ids[0]]?["text"] as? String == "edited here")
        #expect(remote[ids[1]] == nil)
        let created = try #require(remote.values.first { $0["text"] as? String == "made here" })
        let createdID = try #require(created["objectId"] as? String)
        // The placeholder row took the remote's objectId; the replica equals the remote, byte for byte.
        let rows = try setup.database.write { database in try database.rows(of: "quotes") }
        #expect(Set(rows.keys) == Set(remote.keys))
        let lines = try setup.server.server.control("/__admin/dump?class=Quote&lines=1")
        for line in String(decoding: lines, as: UTF8.self).split(separator: "\n") {
            let id = try #require((try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["objectId"] as? String)
            #expect(try setup.database.write { try $0.body(of: id, in: "quotes") } == String(line))
        }
        #expect(try setup.outbox().isEmpty)
        let log = try setup.database.write { try $0.changes(after: 0, limit: 100) }.filter { $0.origin == "local" }
        #expect(log.map { "\($0.operation) \($0.id)" }.sorted() == ["delete \(ids[1])", "insert \(createdID)", "update \(ids[0])"])

        let again = try setup.pass()
        #expect(again.push.isEmpty)
        #expect(again.counts.inserted + again.counts.updated + again.counts.deleted == 0)
    }

    @Test func aCounterBumpedHereAndThereAtOnceEndsWithEveryBump() throws {
        let setup = try Self.setUp(objects: 1)
        defer { setup.database.close() }
        let id = try #require(try setup.remote().keys.first)
        let start = try #require(try setup.remote()[id]?["n"] as? Int)
        let server = setup.server
        let remoteBumps = Thread.detachedResult {
            for _ in 0..<100 {
                try Shell.run("/usr/bin/curl", ["-sS", "-f", "-X", "PUT", "-H", "X-Parse-Application-Id: ferry-test", "-H", "X-Parse-REST-API-Key: rest-secret",
                                                "-H", "Content-Type: application/json", "--data-binary", #"{"n":{"__op":"Increment","amount":1}}"#,
                                                server.mount + "/classes/Quote/\(id)"])
            }
        }
        let other = try setup.client()
        defer { other.close() }
        for bump in 0..<100 {
            try other.execute("UPDATE quotes SET body = json_set(body, '$.n', json_extract(body, '$.n') + 1) WHERE id = '\(id)'")
            if bump % 10 == 9 { _ = try setup.pass() }
        }
        try remoteBumps.get()
        let final = try setup.pass()
        #expect(final.push.conflicts == 0)
        #expect(try setup.remote()[id]?["n"] as? Int == start + 200)
        let local = try #require(try setup.database.write { try $0.body(of: id, in: "quotes") })
        #expect((try JSONSerialization.jsonObject(with: Data(local.utf8)) as? [String: Any])?["n"] as? Int == start + 200)
        #expect(try setup.outbox().isEmpty)
    }

    @Test(arguments: ConflictPolicy.allCases)
    func oneFieldChangedOnBothSides(_ policy: ConflictPolicy) throws {
        let setup = try Self.setUp(objects: 2, conflict: policy)
        defer { setup.database.close() }
        let id = try #require(try setup.remote().keys.sorted().first)
        let other = try setup.client()
        defer { other.close() }
        try other.execute("UPDATE quotes SET body = json_set(body, '$.text', 'ours') WHERE id = '\(id)'")
        try setup.parse("PUT", "/classes/Quote/\(id)", #"{"text":"theirs"}"#)

        let report = try setup.pass()
        #expect(report.push.conflicts == 1)
        let conflicts = try setup.database.write { try $0.conflicts(of: "quotes", all: true) }
        #expect(conflicts.count == 1)
        #expect(conflicts.first?.localBody?.contains("ours") == true)
        #expect(conflicts.first?.remoteBody?.contains("theirs") == true)
        let texts = try setup.remote().values.compactMap { $0["text"] as? String }
        let row = try setup.database.write { try $0.body(of: id, in: "quotes") } ?? ""
        switch policy {
        case .hold:
            #expect(texts.contains("theirs") && !texts.contains("ours"))
            #expect(row.contains("ours"), "the local version stays in the row while held")
            #expect(report.gaps == [.localChangesNotPushed(queued: 0, held: 1, refused: 0, reason: nil)])
            #expect(conflicts.first?.resolution == nil)
            // Resolved by a person (the same as the SQL UPDATE of ferry_conflicts): the next pass pushes it.
            _ = try setup.database.write { try $0.chooseResolution(.rebaseLocal, conflict: conflicts[0].conflictID) }
            let resolved = try setup.pass()
            #expect(resolved.isComplete)
            #expect(try setup.remote()[id]?["text"] as? String == "ours")
        case .remoteWins:
            #expect(texts.contains("theirs") && !texts.contains("ours"))
            #expect(row.contains("theirs"))
            #expect(report.isComplete)
        case .localWins:
            #expect(try setup.remote()[id]?["text"] as? String == "ours")
            #expect(row.contains("ours"))
        case .keepBoth:
            #expect(try setup.remote()[id]?["text"] as? String == "theirs")
            #expect(texts.contains("ours"), "the local version was created as a new object: \(texts)")
            #expect(try setup.remote().count == 3)
        }
        #expect(try setup.outbox().isEmpty || policy == .hold)
        if policy != .hold {
            // Nothing left behind: the replica holds what the remote holds.
            let rows = try setup.database.write { database in try database.rows(of: "quotes") }
            #expect(Set(rows.keys) == Set(try setup.remote().keys))
        }
    }

    @Test func aRefusedChangeWaitsWithItsReason_andDoesNotHoldUpTheOthers() throws {
        let setup = try Self.setUp(objects: 2)
        defer { setup.database.close() }
        let ids = try setup.remote().keys.sorted()
        let other = try setup.client()
        defer { other.close() }
        // Parse refuses field names with '-' (code 105).
        try other.execute("UPDATE quotes SET body = json_set(body, '$.\"bad-name\"', 1) WHERE id = '\(ids[0])'")
        try other.execute("UPDATE quotes SET body = json_set(body, '$.text', 'fine') WHERE id = '\(ids[1])'")
        let report = try setup.pass()
        #expect(report.push.refused == 1)
        #expect(report.push.pushed == 1)
        #expect(try setup.remote()[ids[1]]?["text"] as? String == "fine")
        let outbox = try setup.outbox()
        #expect(outbox.refused == 1)
        #expect(outbox.lastRefusal?.contains("Parse error 105") == true, "\(String(describing: outbox.lastRefusal))")
        guard case .localChangesNotPushed(0, 0, 1, let reason)? = report.gaps.first else {
            Issue.record("expected a refused change among the gaps: \(report.gaps)")
            return
        }
        #expect(reason?.contains("Invalid field name") == true)
        // Status says why from the queue itself, also when no pull's words are recorded
        // since (a push alone, between passes).
        try other.execute("UPDATE ferry_sync_state SET incomplete = NULL")
        let state = try #require(try setup.database.write { try $0.syncState(of: "quotes") })
        let row = StoreStatus(store: "quotes", kind: "parse", state: state, now: Date())
        #expect(row.state == "incomplete")
        #expect(row.incomplete?.contains("refused by the remote: ") == true && row.incomplete?.contains("Invalid field name") == true,
                "\(String(describing: row.incomplete))")
        // A new local write to the record queues it again.
        try other.execute("UPDATE quotes SET body = json_remove(body, '$.\"bad-name\"') WHERE id = '\(ids[0])'")
        let fixed = try setup.pass()
        #expect(fixed.isComplete)
        #expect(try setup.outbox().isEmpty)
    }

    @Test func aRemoteThatIsDownKeepsEveryWriteQueued_andItsRetryAfterIsHonoured() throws {
        let setup = try Self.setUp(objects: 3)
        defer { setup.database.close() }
        let ids = try setup.remote().keys.sorted()
        let other = try setup.client()
        defer { other.close() }
        try other.execute("UPDATE quotes SET body = json_set(body, '$.text', 'later') WHERE id = '\(ids[0])'")
        try setup.server.admin("fault", ["next": 1, "status": 503, "retry_after": 7])
        guard case .failure(let failure) = try Self.run(setup.store, setup.database) else {
            Issue.record("the pass succeeded while the remote answered 503")
            return
        }
        #expect(failure.kind == .httpStatus(503))
        #expect(failure.retryAfter == .seconds(7), "the backoff waits for the remote, as for a pull")
        #expect(try setup.outbox().queued == 1, "nothing is lost while the remote is down")
        let recovered = try setup.pass()
        #expect(recovered.push.pushed == 1)
        #expect(try setup.remote()[ids[0]]?["text"] as? String == "later")
    }

    @Test func aCounterBumpedByOneHereAndByOneThereEndsTwoHigher() throws {
        let setup = try Self.setUp(objects: 1)
        defer { setup.database.close() }
        let id = try #require(try setup.remote().keys.first)
        let start = try #require(try setup.remote()[id]?["n"] as? Int)
        let other = try setup.client()
        defer { other.close() }
        try other.execute("UPDATE quotes SET body = json_set(body, '$.n', json_extract(body, '$.n') + 1) WHERE id = '\(id)'")
        try setup.parse("PUT", "/classes/Quote/\(id)", #"{"n":{"__op":"Increment","amount":1}}"#)
        _ = try setup.pass()
        #expect(try setup.remote()[id]?["n"] as? Int == start + 2)
    }

    @Test func anIncrementThatMayHaveAppliedBeforeACrashIsAConflict_neverCountedTwice() throws {
        let setup = try Self.setUp(objects: 1)
        defer { setup.database.close() }
        let id = try #require(try setup.remote().keys.first)
        let start = try #require(try setup.remote()[id]?["n"] as? Int)
        let version = try #require(try setup.remote()[id]?["updatedAt"] as? String)
        let other = try setup.client()
        defer { other.close() }
        try other.execute("UPDATE quotes SET body = json_set(body, '$.n', json_extract(body, '$.n') + 1) WHERE id = '\(id)'")
        // As a push killed after Parse applied it leaves things: recorded as sent, applied there.
        let change = try setup.firstQueued()
        try setup.database.write { try $0.noteUpdatesSent([UpdateSend(change, on: version, body: change.body ?? "")], of: "quotes", at: Date()) }
        try setup.parse("PUT", "/classes/Quote/\(id)", #"{"n":{"__op":"Increment","amount":1}}"#)
        let report = try setup.pass()
        #expect(report.push.conflicts == 1, "\(report.summary)")
        #expect(try setup.remote()[id]?["n"] as? Int == start + 1, "never counted twice")
        #expect(!report.isComplete, "held, and said so")
    }

    @Test func aCreateSentBeforeACrash_andChangedHereSince_isFoundAndUpdated() throws {
        let setup = try Self.setUp(objects: 2)
        defer { setup.database.close() }
        let other = try setup.client()
        defer { other.close() }
        try other.execute(#"INSERT INTO quotes(body) VALUES ('{"text":"first","n":1}')"#)
        let change = try setup.firstQueued()
        let sent = #"{"n":1,"text":"first"}"#
        try setup.noteSent(change, sent)
        try setup.parse("POST", "/classes/Quote", sent)
        try other.execute("UPDATE quotes SET body = json_set(body, '$.text', 'second', '$.n', 3) WHERE id = \(literal(change.id))")
        let report = try setup.pass()
        #expect(report.push.conflicts == 0, "\(report.summary)")
        let made = try setup.remote().values.filter { ["first", "second"].contains($0["text"] as? String) }
        #expect(made.count == 1)
        #expect(made.first?["text"] as? String == "second")
        #expect(made.first?["n"] as? Int == 3)
        let rows = try setup.database.write { database in try database.rows(of: "quotes") }
        #expect(Set(rows.keys) == Set(try setup.remote().keys))
    }

    @Test func aCreateSentMomentsBeforeACrashAndNotFoundWaits_thenIsSentAgain() throws {
        let setup = try Self.setUp(objects: 2)
        defer { setup.database.close() }
        let other = try setup.client()
        defer { other.close() }
        try other.execute(#"INSERT INTO quotes(body) VALUES ('{"text":"in doubt"}')"#)
        let change = try setup.firstQueued()
        // Sent just now, not on the server (yet): the server may still be handling it.
        try setup.noteSent(change, #"{"text":"in doubt"}"#)
        let early = try setup.pass()
        #expect(early.push.pushed == 0)
        #expect(try setup.outbox().queued == 1, "left queued, not created again yet")
        #expect(early.gaps == [.localChangesNotPushed(queued: 1, held: 0, refused: 0, reason: nil)], "and the pass says so, never ok")
        #expect(try setup.remote().values.filter { $0["text"] as? String == "in doubt" }.isEmpty)
        // Long enough ago that a lost send would show: created now, once.
        try setup.noteSent(change, #"{"text":"in doubt"}"#, at: Date().addingTimeInterval(-60))
        let later = try setup.pass()
        #expect(later.push.pushed == 1)
        #expect(try setup.remote().values.filter { $0["text"] as? String == "in doubt" }.count == 1)
    }

    @Test func withClientObjectIDsACreateSentTwiceIsOneObject_andALaterLocalEditArrives() throws {
        let setup = try Self.setUp(objects: 2, clientIDs: true)
        defer { setup.database.close() }
        let other = try setup.client()
        defer { other.close() }
        try other.execute(#"INSERT INTO quotes(body) VALUES ('{"text":"first","n":1}')"#)
        let change = try setup.firstQueued()
        // A push killed after Parse created the object under the id Ferry chose.
        let sent = #"{"n":1,"text":"first"}"#
        try setup.noteSent(change, sent, remoteID: "chosenId01")
        try setup.parse("POST", "/classes/Quote", #"{"objectId":"chosenId01","n":1,"text":"first"}"#)
        // Then the row changed here, and the object there (another field).
        try other.execute("UPDATE quotes SET body = json_set(body, '$.text', 'second') WHERE id = \(literal(change.id))")
        try setup.parse("PUT", "/classes/Quote/chosenId01", #"{"author":"someone"}"#)
        let report = try setup.pass()
        #expect(report.push.conflicts == 0, "\(report.summary)")
        let object = try #require(try setup.remote()["chosenId01"])
        #expect(object["text"] as? String == "second")
        #expect(object["author"] as? String == "someone", "the remote's own change is kept")
        #expect(try setup.remote().values.filter { ["first", "second"].contains($0["text"] as? String) }.count == 1, "one object")
        #expect(try setup.database.write { try $0.body(of: "chosenId01", in: "quotes") }?.contains("second") == true)
        #expect(try setup.outbox().isEmpty)
    }

    /// What a found earlier create becomes, as a table: the row unchanged is accepted; changed,
    /// it is queued on top of the object as found when nobody touched the object since it was
    /// made, and on top of what was sent (three-way) when someone did.
    @Test func aFoundCreateIsBasedOnTheObjectWhenNobodyTouchedIt() {
        let sent = #"{"text":"first"}"#
        let untouched = RemoteRecord(id: "chosenId01", version: "2026-01-01T00:00:00.000Z",
                                     body: Data(#"{"objectId":"chosenId01","text":"first","createdAt":"2026-01-01T00:00:00.000Z","updatedAt":"2026-01-01T00:00:00.000Z"}"#.utf8))
        let touched = RemoteRecord(id: "chosenId01", version: "2026-01-01T00:00:05.000Z",
                                   body: Data(#"{"objectId":"chosenId01","text":"first","author":"someone","createdAt":"2026-01-01T00:00:00.000Z","updatedAt":"2026-01-01T00:00:05.000Z"}"#.utf8))
        let same: [String: JSONValue] = ["text": .string("first")]
        let edited: [String: JSONValue] = ["text": .string("second")]
        #expect(ParseWriter.adoption(of: untouched, sent: sent, row: same) == .accepted(untouched))
        #expect(ParseWriter.adoption(of: untouched, sent: sent, row: edited) == .acceptedEarlierSend(untouched, sent: nil))
        #expect(ParseWriter.adoption(of: touched, sent: sent, row: edited) == .acceptedEarlierSend(touched, sent: sent))
    }

    /// A create whose answer a crash lost, its row edited meanwhile, is found and queued on top
    /// of the object; then the row is deleted before the next push (between two rounds, in the
    /// crash loop). Nobody else wrote the object: it is deleted, no conflict. Had someone written
    /// it since it was made, the delete meets that change as a conflict.
    @Test(arguments: [false, true])
    func withClientObjectIDsAFoundCreateDeletedHereIsDeletedThere(touchedByAnother: Bool) throws {
        let setup = try Self.setUp(objects: 1, clientIDs: true)
        defer { setup.database.close() }
        let other = try setup.client()
        defer { other.close() }
        try other.execute(#"INSERT INTO quotes(body) VALUES ('{"text":"first"}')"#)
        let sent = #"{"text":"first"}"#
        try setup.noteSent(try setup.firstQueued(), sent, remoteID: "chosenId02")
        try setup.parse("POST", "/classes/Quote", #"{"objectId":"chosenId02","text":"first"}"#)
        if touchedByAnother { try setup.parse("PUT", "/classes/Quote/chosenId02", #"{"author":"someone"}"#) }
        try other.execute("UPDATE quotes SET body = json_set(body, '$.text', 'second') WHERE id LIKE 'local-%'")
        // The round that found the object, as the writer decides it and the store records it.
        let change = try setup.firstQueued()
        let line = try #require(String(decoding: try setup.server.server.control("/__admin/dump?class=Quote&lines=1"), as: UTF8.self)
            .split(separator: "\n").first { $0.contains("chosenId02") })
        let fields = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        let found = RemoteRecord(id: "chosenId02", version: try #require(fields["updatedAt"] as? String), body: Data(line.utf8))
        let row = try #require(change.body.flatMap(JSONValue.object(parsing:)))
        _ = try setup.database.write { database in
            try database.prepare(StoreDefinition(setup.store))
            return try database.recordPush(change, result: ParseWriter.adoption(of: found, sent: sent, row: ParseFieldMerge.create(local: row)),
                                           of: "quotes", at: Date())
        }
        try other.execute("DELETE FROM quotes WHERE id = 'chosenId02'")
        let report = try setup.pass()
        if touchedByAnother {
            #expect(report.push.conflicts == 1, "\(report.summary)")
            #expect(try setup.remote()["chosenId02"]?["author"] as? String == "someone", "held: their change stays")
        } else {
            #expect(report.push.conflicts == 0, "\(report.summary)")
            #expect(try setup.remote()["chosenId02"] == nil, "deleted there too")
            #expect(try setup.outbox().isEmpty)
            #expect(report.isComplete, "\(report.gaps)")
        }
    }

    @Test func withClientObjectIDsANewCreateNamesItsObject() throws {
        let setup = try Self.setUp(objects: 1, clientIDs: true)
        defer { setup.database.close() }
        let other = try setup.client()
        defer { other.close() }
        try other.execute(#"INSERT INTO quotes(id, body) VALUES ('myOwnId', '{"text":"named here"}')"#)
        try other.execute(#"INSERT INTO quotes(body) VALUES ('{"text":"named by ferry"}')"#)
        let report = try setup.pass()
        #expect(report.push.pushed == 2, "\(report.summary)")
        #expect(try setup.remote()["myOwnId"]?["text"] as? String == "named here")
        let rows = try setup.database.write { database in try database.rows(of: "quotes") }
        #expect(Set(rows.keys) == Set(try setup.remote().keys))
    }

    @Test func withClientObjectIDsACreateLostBeforeItLandedIsSentAgainAtOnce_underItsID() throws {
        let setup = try Self.setUp(objects: 1, clientIDs: true)
        defer { setup.database.close() }
        let other = try setup.client()
        defer { other.close() }
        try other.execute(#"INSERT INTO quotes(body) VALUES ('{"text":"lost on the way"}')"#)
        let change = try setup.firstQueued()
        // Recorded as sent under an id a moment ago; the request never reached the server.
        try setup.noteSent(change, #"{"text":"lost on the way"}"#, remoteID: "lostOnWay1")
        let report = try setup.pass()
        #expect(report.push.pushed == 1, "no need to wait: sending again names the same object")
        #expect(try setup.remote()["lostOnWay1"]?["text"] as? String == "lost on the way")
        #expect(try setup.remote().values.filter { $0["text"] as? String == "lost on the way" }.count == 1)
        #expect(try setup.database.write { try $0.body(of: "lostOnWay1", in: "quotes") } != nil, "the row took the id")
        #expect(report.isComplete, "\(report.summary)")
    }

    @Test func withClientObjectIDsAnIdAnotherObjectTookIsAConflict_notAdopted() throws {
        let setup = try Self.setUp(objects: 1, clientIDs: true)
        defer { setup.database.close() }
        let other = try setup.client()
        defer { other.close() }
        try other.execute(#"INSERT INTO quotes(id, body) VALUES ('takenId01', '{"text":"mine"}')"#)
        // Another app made an object of that id before the push.
        try setup.parse("POST", "/classes/Quote", #"{"objectId":"takenId01","text":"theirs"}"#)
        let report = try setup.pass()
        #expect(report.push.conflicts == 1, "\(report.summary)")
        #expect(try setup.remote()["takenId01"]?["text"] as? String == "theirs", "their object is not overwritten")
        #expect(try setup.database.write { try $0.conflicts(of: "quotes") }.map(\.id) == ["takenId01"])
        #expect(try setup.database.write { try $0.body(of: "takenId01", in: "quotes") }?.contains("mine") == true, "held: the row keeps the local text")
    }

    @Test func aCreateSentBeforeACrashIsFoundNotMadeTwice() throws {
        let setup = try Self.setUp(objects: 2)
        defer { setup.database.close() }
        let other = try setup.client()
        defer { other.close() }
        try other.execute(#"INSERT INTO quotes(body) VALUES ('{"text":"only once","n":42}')"#)
        let change = try setup.firstQueued()
        // As a killed push leaves it: the create recorded as sent, and the remote has it.
        let sent = #"{"n":42,"text":"only once"}"#
        try setup.noteSent(change, sent)
        try setup.parse("POST", "/classes/Quote", sent)

        let report = try setup.pass()
        #expect(report.push.pushed == 1)
        let copies = try setup.remote().values.filter { $0["text"] as? String == "only once" }
        #expect(copies.count == 1)
        let rows = try setup.database.write { database in try database.rows(of: "quotes") }
        #expect(Set(rows.keys) == Set(try setup.remote().keys))
    }

    /// A create sent before a crash whose row was deleted here since: the object it made is
    /// deleted, found by its fields or by the id the client chose.
    @Test(arguments: [false, true])
    func aCreateSentBeforeACrash_andDeletedHereSince_isDeletedThere(_ clientIDs: Bool) throws {
        let setup = try Self.setUp(objects: 2, clientIDs: clientIDs)
        defer { setup.database.close() }
        let other = try setup.client()
        defer { other.close() }
        try other.execute(#"INSERT INTO quotes(body) VALUES ('{"text":"made, then unwanted","n":5}')"#)
        let change = try setup.firstQueued()
        let sent = #"{"n":5,"text":"made, then unwanted"}"#
        try setup.noteSent(change, sent, remoteID: clientIDs ? "unwantedId" : nil)
        try setup.parse("POST", "/classes/Quote", clientIDs ? #"{"objectId":"unwantedId","n":5,"text":"made, then unwanted"}"# : sent)
        try other.execute("DELETE FROM quotes WHERE id = \(literal(change.id))")
        let report = try setup.pass()
        #expect(report.push.conflicts == 0, "\(report.summary)")
        #expect(try setup.remote().values.filter { $0["text"] as? String == "made, then unwanted" }.isEmpty)
        #expect(try setup.outbox().isEmpty)
        #expect(report.isComplete, "\(report.summary)")
        let rows = try setup.database.write { database in try database.rows(of: "quotes") }
        #expect(Set(rows.keys) == Set(try setup.remote().keys))
    }

    /// The same, with the object changed by another writer after it was made: the delete
    /// meets the store's policy (held here) instead of erasing that change.
    @Test func aCreateSentBeforeACrash_deletedHere_andChangedThere_isAConflict() throws {
        let setup = try Self.setUp(objects: 2, clientIDs: true)
        defer { setup.database.close() }
        let other = try setup.client()
        defer { other.close() }
        try other.execute(#"INSERT INTO quotes(body) VALUES ('{"text":"made here"}')"#)
        let change = try setup.firstQueued()
        try setup.noteSent(change, #"{"text":"made here"}"#, remoteID: "changedId1")
        try setup.parse("POST", "/classes/Quote", #"{"objectId":"changedId1","text":"made here"}"#)
        try setup.parse("PUT", "/classes/Quote/changedId1", #"{"remote":"changed there"}"#)
        try other.execute("DELETE FROM quotes WHERE id = \(literal(change.id))")
        let report = try setup.pass()
        #expect(report.push.conflicts == 1, "\(report.summary)")
        #expect(try setup.remote()["changedId1"]?["remote"] as? String == "changed there")
        let held = try setup.database.write { try $0.conflicts(of: "quotes") }
        #expect(held.map(\.id) == ["changedId1"])
        #expect(held.first?.localOperation == .delete)
        #expect(try setup.outbox().held == 1)
        #expect(!report.isComplete)
    }

    /// Deleted here after a send that left no object (yet): the delete waits while the send
    /// may still land, and is settled once it no longer can.
    @Test func aCreateSentMomentsBeforeACrash_thenDeletedHere_waitsForTheSendToSettle() throws {
        let setup = try Self.setUp(objects: 2, clientIDs: true)
        defer { setup.database.close() }
        let other = try setup.client()
        defer { other.close() }
        try other.execute(#"INSERT INTO quotes(body) VALUES ('{"text":"maybe made"}')"#)
        let change = try setup.firstQueued()
        try setup.noteSent(change, #"{"text":"maybe made"}"#, remoteID: "maybeMade1")
        try other.execute("DELETE FROM quotes WHERE id = \(literal(change.id))")
        let early = try setup.pass()
        #expect(try setup.outbox().queued == 1, "kept: the send may still land")
        #expect(!early.isComplete)
        // The late send lands after all; the next pass, past the settle time, removes it.
        try setup.parse("POST", "/classes/Quote", #"{"objectId":"maybeMade1","text":"maybe made"}"#)
        try setup.noteSent(change, #"{"text":"maybe made"}"#, remoteID: "maybeMade1", at: Date().addingTimeInterval(-60))
        let later = try setup.pass()
        #expect(try setup.remote()["maybeMade1"] == nil)
        #expect(try setup.outbox().isEmpty)
        #expect(later.isComplete, "\(later.summary)")
    }
}

extension Thread {
    /// Runs `body` on a new thread; `get()` waits for it and rethrows what it threw.
    static func detachedResult(_ body: @escaping @Sendable () throws -> Void) -> DetachedResult {
        let result = DetachedResult()
        Thread.detachNewThread {
            do { try body() } catch { result.set(error) }
            result.finish()
        }
        return result
    }
}

final class DetachedResult: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var error: (any Error)?

    func set(_ error: any Error) { lock.withLock { self.error = error } }
    func finish() { done.signal() }

    func get() throws {
        done.wait()
        if let error = lock.withLock({ error }) { throw error }
    }
}
