import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// Local SQL writes pushed to a JSON API with the store's templates (json_pages_server.py's
/// /items): creates with an Idempotency-Key, merge patches with If-Match, deletes; a record
/// changed on the API meanwhile is a conflict; the API's refusal waits with its words; an
/// operation without a template is refused when written; the configuration says what is wrong.
@Suite("Pushing to a JSON API", .serialized)
struct JSONPushTests {
    struct Setup {
        let server: TestServer
        let directory: TemporaryDirectory
        let database: SharedDatabase
        let store: StoreConfiguration
        /// The lossy proxy the store reaches the server through, when asked for.
        let proxy: TestServer?

        func pass() throws -> PassReport { try ParsePushTests.run(store, database).get() }
        func client() throws -> SQLiteConnection { try SQLiteConnection(path: directory.path("replica.db"), mode: .readWrite) }

        func item(_ id: Int) throws -> [String: Any]? {
            guard let data = try? Shell.run("/usr/bin/curl", ["-sS", "-f", server.baseURL + "/items/\(id)"]) else { return nil }
            return try JSONSerialization.jsonObject(with: data) as? [String: Any]
        }

        func all() throws -> [[String: Any]] {
            try JSONSerialization.jsonObject(with: Shell.run("/usr/bin/curl", ["-sS", "-f", server.baseURL + "/items?per_page=1000"])) as? [[String: Any]] ?? []
        }
    }

    static func setUp(_ keys: [String: String] = [:], ifMatch: Bool = true, serverArguments: [String] = [],
                      throughProxy: Bool = false) throws -> Setup {
        let server = try TestServer.python("json_pages_server.py", arguments: ["--count", "5"] + serverArguments)
        let proxy = throughProxy ? try TestServer.python("lossy_proxy.py", arguments: ["--upstream", server.baseURL]) : nil
        var options = ["pagination": "link", "page-size-param": "per_page", "page-size": "100", "push": "yes",
                       "push-create": "POST {url}", "push-update": "PATCH {url}/{id}", "push-delete": "DELETE {url}/{id}",
                       "push-if-match": ifMatch ? "yes" : "no"]
        options.merge(keys) { $1 }
        let store = try configuredStore(kind: "json", url: (proxy ?? server).baseURL + "/items", options.filter { !$0.value.isEmpty })
        let directory = try TemporaryDirectory()
        let database = try SharedDatabase(path: directory.path("replica.db"))
        let setup = Setup(server: server, directory: directory, database: database, store: store, proxy: proxy)
        _ = try setup.pass()
        return setup
    }

    @Test(arguments: [true, false])
    func createUpdateAndDeleteArrive(ifMatch: Bool) throws {
        let setup = try Self.setUp(ifMatch: ifMatch)
        defer { setup.server.stop(); setup.database.close() }
        let other = try setup.client()
        defer { other.close() }
        try other.execute(#"INSERT INTO items(body) VALUES ('{"name":"made here"}')"#)
        try other.execute("UPDATE items SET body = json_set(json_remove(body, '$.rev'), '$.name', 'edited here') WHERE id = '1'")
        try other.execute("DELETE FROM items WHERE id = '2'")
        let report = try setup.pass()
        #expect(report.push.pushed == 3, "\(report.summary)")
        #expect(report.counts.inserted + report.counts.updated + report.counts.deleted == 0, "the pull found nothing new: \(report.summary)")
        #expect(try setup.item(1)?["name"] as? String == "edited here")
        #expect(try setup.item(1)?["rev"] == nil, "the merge patch removed the member")
        #expect(try setup.item(2) == nil)
        let made = try #require(try setup.all().first { $0["name"] as? String == "made here" })
        let id = try #require(made["id"] as? Int)
        #expect(try setup.database.write { try $0.body(of: "\(id)", in: "items") } != nil, "the placeholder row took the API's id")
        #expect(try setup.database.write { try $0.outboxSummary(of: "items") }.isEmpty)
    }

    @Test(arguments: [true, false])
    func aRecordChangedOnTheAPIMeanwhileIsAConflict(ifMatch: Bool) throws {
        let setup = try Self.setUp(ifMatch: ifMatch)
        defer { setup.server.stop(); setup.database.close() }
        let other = try setup.client()
        defer { other.close() }
        try other.execute("UPDATE items SET body = json_set(body, '$.name', 'ours') WHERE id = '3'")
        _ = try setup.server.control("/admin/update", method: "POST", body: #"{"ids":[3]}"#)
        let report = try setup.pass()
        #expect(report.push.conflicts == 1, "\(report.summary)")
        #expect(try setup.item(3)?["name"] as? String == "item 3 é", "nothing overwritten while held")
        #expect(report.gaps == [.localChangesNotPushed(queued: 0, held: 1, refused: 0, reason: nil)])
    }

    @Test func theAPIsRefusalWaitsWithItsWords() throws {
        let setup = try Self.setUp()
        defer { setup.server.stop(); setup.database.close() }
        let other = try setup.client()
        defer { other.close() }
        try other.execute("UPDATE items SET body = json_set(body, '$.invalid', 1) WHERE id = '4'")
        let report = try setup.pass()
        #expect(report.push.refused == 1)
        let outbox = try setup.database.write { try $0.outboxSummary(of: "items") }
        #expect(outbox.lastRefusal?.contains("HTTP 422") == true, "\(String(describing: outbox.lastRefusal))")
        #expect(outbox.lastRefusal?.contains("invalid is not allowed") == true)
    }

    @Test func aCreateSentTwiceIsOneRecord_byItsIdempotencyKey() throws {
        let setup = try Self.setUp()
        defer { setup.server.stop(); setup.database.close() }
        let other = try setup.client()
        defer { other.close() }
        try other.execute(#"INSERT INTO items(body) VALUES ('{"name":"once"}')"#)
        let change = try #require(try setup.database.write { try $0.queuedLocalChanges(of: "items") }.first)
        // A push killed after the API stored it: the same key was sent.
        _ = try Shell.run("/usr/bin/curl", ["-sS", "-f", "-X", "POST", "-H", "Idempotency-Key: ferry-items-\(change.id)", "-H", "Content-Type: application/json",
                                            "--data-binary", #"{"name":"once"}"#, setup.server.baseURL + "/items"])
        _ = try setup.pass()
        #expect(try setup.all().filter { $0["name"] as? String == "once" }.count == 1)
    }

    @Test func aCreateTheAPIMadeBeforeACrash_andChangedHereSince_isUpdated() throws {
        let setup = try Self.setUp()
        defer { setup.server.stop(); setup.database.close() }
        let other = try setup.client()
        defer { other.close() }
        try other.execute(#"INSERT INTO items(body) VALUES ('{"name":"first"}')"#)
        let change = try #require(try setup.database.write { try $0.queuedLocalChanges(of: "items") }.first)
        // A push killed after the API stored it: the send was recorded before it went out, as
        // every push records it, and the same key was sent.
        _ = try setup.database.write { try $0.noteCreateSent(change, body: #"{"name":"first"}"#, of: "items", at: Date()) }
        _ = try Shell.run("/usr/bin/curl", ["-sS", "-f", "-X", "POST", "-H", "Idempotency-Key: ferry-items-\(change.id)", "-H", "Content-Type: application/json",
                                            "--data-binary", #"{"name":"first"}"#, setup.server.baseURL + "/items"])
        try other.execute("UPDATE items SET body = json_set(body, '$.name', 'second') WHERE id = \(literal(change.id))")
        let report = try setup.pass()
        #expect(report.push.conflicts == 0, "\(report.summary)")
        let names = try setup.all().compactMap { $0["name"] as? String }
        #expect(!names.contains("first"))
        #expect(names.filter { $0 == "second" }.count == 1)
    }

    /// An update sent, its answer lost after the API applied it, then the row deleted here: the
    /// API holding what was sent is that send, not another writer's change, even where the API
    /// stamps every write (with `version-field = none` the stamp is just another member).
    @Test(arguments: ["updated_at", "none"])
    func aDeleteAfterAnUpdateWhoseAnswerWasLost_isNoConflict(versionField: String) throws {
        let setup = try Self.setUp(["version-field": versionField], ifMatch: false)
        defer { setup.server.stop(); setup.database.close() }
        let other = try setup.client()
        defer { other.close() }
        try other.execute("UPDATE items SET body = json_set(body, '$.name', 'sent') WHERE id = '3'")
        let change = try #require(try setup.database.write { try $0.queuedLocalChanges(of: "items") }.first)
        let body = try #require(change.body)
        try setup.database.write {
            try $0.noteUpdatesSent([UpdateSend(change, on: change.baseVersion ?? "", body: body)], of: "items", at: Date(timeIntervalSinceNow: -3600))
        }
        _ = try Shell.run("/usr/bin/curl", ["-sS", "-f", "-X", "PATCH", "-H", "Content-Type: application/json",
                                            "--data-binary", #"{"name":"sent"}"#, setup.server.baseURL + "/items/3"])
        try other.execute("DELETE FROM items WHERE id = '3'")
        let report = try setup.pass()
        #expect(report.push.conflicts == 0, "\(report.summary)")
        #expect(try setup.item(3) == nil, "the delete arrived")
        #expect(try setup.database.write { try $0.outboxSummary(of: "items") }.isEmpty)
    }

    /// Local-wins on an API without versions (`version-field = none`): the push carries the
    /// local edit alone, so another writer's change to other members stays, and when its answer
    /// is lost the next push finds our edit there, though the API stamped the record anew: no
    /// second conflict.
    @Test func aLocalWinAfterALostAnswer_isOneConflict_andKeepsTheOtherWritersFields() throws {
        let setup = try Self.setUp(["version-field": "none", "conflict": "local-wins"], ifMatch: false, throughProxy: true)
        let proxy = try #require(setup.proxy)
        defer { proxy.stop(); setup.server.stop(); setup.database.close() }
        let other = try setup.client()
        defer { other.close() }
        try other.execute("UPDATE items SET body = json_set(body, '$.name', 'ours') WHERE id = '3'")
        _ = try setup.server.control("/admin/update", method: "POST", body: #"{"ids":[3]}"#)
        _ = try proxy.control("/__proxy/lose?writes=1", method: "POST")
        func lostAnswers() throws -> Int? {
            (try JSONSerialization.jsonObject(with: proxy.control("/__proxy/stats")) as? [String: Any])?["lost"] as? Int
        }
        for _ in 0..<3 where try lostAnswers() != 1 {
            _ = try? setup.pass()
        }
        try #require(try lostAnswers() == 1, "the rebased push's answer was lost")
        _ = try setup.pass()
        let item = try setup.item(3)
        #expect(item?["name"] as? String == "ours")
        #expect(item?["rev"] as? Int == 1, "the other writer's change to another member stays")
        #expect(try setup.database.write { try $0.conflicts(of: "items", all: true) }.count == 1)
        #expect(try setup.database.write { try $0.outboxSummary(of: "items") }.isEmpty)
    }

    /// An API that gives a deleted record's id to the next record it makes: a delete queued here
    /// for the old record finds another body under its id, which nothing tells from an edit.
    /// It meets a conflict, and the newcomer survives every policy but local-wins.
    @Test(arguments: ["hold", "remote-wins", "keep-both"])
    func aDeleteWhoseIdTheAPIGaveToANewRecord_meetsAConflict(policy: String) throws {
        let setup = try Self.setUp(["conflict": policy], serverArguments: ["--reuse-ids"])
        defer { setup.server.stop(); setup.database.close() }
        let other = try setup.client()
        defer { other.close() }
        try other.execute("DELETE FROM items WHERE id = '5'")
        _ = try Shell.run("/usr/bin/curl", ["-sS", "-f", "-X", "DELETE", setup.server.baseURL + "/items/5"])
        _ = try Shell.run("/usr/bin/curl", ["-sS", "-f", "-X", "POST", "-H", "Content-Type: application/json",
                                            "--data-binary", #"{"name":"newcomer"}"#, setup.server.baseURL + "/items"])
        try #require(try setup.item(5)?["name"] as? String == "newcomer", "the server reused the id")
        let report = try setup.pass()
        #expect(report.push.conflicts == 1, "\(report.summary)")
        #expect(try setup.item(5)?["name"] as? String == "newcomer")
    }

    @Test func anOperationWithoutATemplateIsRefusedWhenWritten() throws {
        let setup = try Self.setUp(["push-delete": ""])
        defer { setup.server.stop(); setup.database.close() }
        let other = try setup.client()
        defer { other.close() }
        let error = #expect(throws: SQLiteError.self) { try other.execute("DELETE FROM items WHERE id = '1'") }
        #expect(error?.message.contains("this store does not push deletes (no push-delete in its section)") == true, "\(String(describing: error))")
    }

    @Test func theConfigurationSaysWhatIsWrong() throws {
        #expect(throws: ConfigurationErrors.self) { try configuredStore(kind: "json", url: "https://example.com/items", ["push": "yes"]) }
        do {
            _ = try configuredStore(kind: "json", url: "https://example.com/items", ["push": "yes", "push-update": "PATCH {url}"])
            Issue.record("a template without {id} was accepted")
        } catch let errors as ConfigurationErrors {
            #expect("\(errors)".contains("does not name the record: put {id} in it"), "\(errors)")
        }
        do {
            _ = try configuredStore(kind: "json", url: "https://example.com/items", ["push": "yes", "push-update": "FETCH {url}/{id}"])
            Issue.record("an unknown method was accepted")
        } catch let errors as ConfigurationErrors {
            #expect("\(errors)".contains("expected a method (PATCH, POST, PUT)"), "\(errors)")
        }
        for (keys, words) in [(["push": "maybe"], "expected yes or no, got 'maybe'"),
                              (["conflict": "remote-wins"], "has no effect without push = yes"),
                              (["push": "yes", "conflict": "newest-wins"], "expected one of hold, remote-wins, local-wins, keep-both")] {
            do {
                _ = try configuredStore(kind: "parse", url: "https://example.com/parse",
                                        keys.merging(["class": "Quote", "application-id": "a", "rest-api-key": "file:/nonexistent"]) { $1 })
                Issue.record("\(keys) was accepted")
            } catch let errors as ConfigurationErrors {
                #expect("\(errors)".contains(words), "\(errors)")
            }
        }
    }
}
