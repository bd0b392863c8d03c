import Foundation
import Logging
import Testing
@testable import FerryKit
import FerryTestSupport

/// The shipped examples against stand-ins that answer as each API's documentation says
/// (`documented_apis.py`), each test one thing those APIs do that Ferry must meet: a failed
/// read within a pass, a page of deletions alone, stamps coarser than two edits, offsets as
/// the API writes them, listings that move under a pass, deletions in a second feed.
@Suite("JSON APIs as their documentation says", .serialized)
struct DocumentedAPITests {
    /// One stand-in and the shipped example pointed at it.
    struct API {
        let server: TestServer
        let example: ExampleConfigurationTests.Example
        let store: String

        /// `name`: documented_apis.py's API; the example with its `origin` (and `ids`) replaced.
        init(_ name: String, example file: String, origin: String, credential: String, store: String, count: Int = 150,
             ids: [String: String] = [:], arguments: [String] = []) throws {
            server = try TestServer.python("documented_apis.py", arguments: ["--api", name, "--count", String(count), "--token", "secret"] + arguments)
            example = try ExampleConfigurationTests.Example(file, origin: origin, local: server.baseURL, credentials: [credential: "secret"],
                                                            replacing: ids)
            self.store = store
        }

        func sync(sweep: Bool = false) throws -> Result<PassReport, SyncError> {
            let sync = try OneShotSync(configuration: example.configuration, storeNames: [], databasePath: example.database, logger: Logger(label: "test"))
            sync.sweepNow = sweep
            return try #require(sync.run(refresh: .milliseconds(50)) { _ in }.first { $0.store == store }?.result)
        }

        /// The ids a correct replica holds, with each record's name (which carries its revision).
        func live() throws -> [String: String] {
            let rows = try JSONSerialization.jsonObject(with: server.control("/admin/live")) as? [[String: Any]] ?? []
            return Dictionary(rows.map { ("\($0["id"]!)", "\($0["name"]!)") }, uniquingKeysWith: { first, _ in first })
        }

        /// The replica's live rows: id and the name at `namePath`.
        func replica(name namePath: String) throws -> [String: String] {
            let rows = try example.query("SELECT id || '|' || coalesce(json_extract(body, '\(namePath)'), '') FROM \(store) WHERE deleted = 0")
            return Dictionary(rows.map { row in
                let parts = row.split(separator: "|", maxSplits: 1).map(String.init)
                return (parts[0], parts.count > 1 ? parts[1] : "")
            }, uniquingKeysWith: { first, _ in first })
        }

        func requests() throws -> Int {
            let stats = try JSONSerialization.jsonObject(with: server.control("/admin/stats")) as? [String: Any]
            return stats?["requests"] as? Int ?? -1
        }

        @discardableResult
        func admin(_ path: String, _ body: String) throws -> [String: Any] {
            try JSONSerialization.jsonObject(with: server.control("/admin/" + path, method: "POST", body: body)) as? [String: Any] ?? [:]
        }
    }

    static func wordpress(count: Int = 150) throws -> API {
        try API("wordpress", example: "wordpress.conf", origin: "https://blog.example.com", credential: "wp-application-password", store: "wp_posts", count: count)
    }

    /// A 503 and a reset connection within a pass are asked again, as clients of these APIs
    /// do: the pass completes, where it used to fail (exit 69) and leave its changes waiting.
    @Test func aFailedReadIsAskedAgainWithinThePass() throws {
        let api = try Self.wordpress(count: 250)
        defer { api.server.stop() }
        try api.admin("fault", #"{"kind": "status", "status": 503, "at": 2}"#)
        try api.admin("fault", #"{"kind": "reset", "at": 4}"#)
        let before = try api.requests()
        let first = try api.sync().get()
        #expect(first.isComplete && first.counts.inserted == 250, "\(first.summary)")
        // Three pages, each failed one asked once more.
        #expect(try api.requests() - before == 5)
        #expect(try api.replica(name: "$.title.rendered") == api.live())
        // The API's rate-limit answer without a wait named (Stripe's and HubSpot's 429) too.
        try api.admin("update", #"{"keys": [3]}"#)
        try api.admin("fault", #"{"kind": "ratelimit", "at": 1}"#)
        let limited = try api.sync().get()
        #expect(limited.isComplete && limited.counts.updated == 1, "\(limited.summary)")
    }

    /// WordPress pages by number, sorted by `modified`: a post edited while page 1 is read
    /// moves to the end, and the first post of page 2 slides onto page 1, read by nobody. The
    /// pass notices (an id again, `X-WP-Total`) and reads the listing again from page 1.
    @Test func aListingThatMovesUnderAFirstSyncIsReadAgain() throws {
        let api = try Self.wordpress(count: 300)
        defer { api.server.stop() }
        try api.admin("schedule", #"{"at": 2, "ops": [{"op": "update", "keys": [5]}]}"#)
        let first = try api.sync().get()
        #expect(first.isComplete, "\(first.gaps)")
        #expect(try api.replica(name: "$.title.rendered") == api.live())
    }

    /// A sweep lists every id to find deletions: a post deleted behind the position while it
    /// pages moves a live post past it. Deleting what that listing did not name would delete
    /// the live post; the sweep reads the listing again and deletes only what is gone.
    @Test func aSweepNeverDeletesOnTheStrengthOfAListingThatMoved() throws {
        let api = try Self.wordpress(count: 300)
        defer { api.server.stop() }
        _ = try api.sync().get()
        try api.admin("schedule", #"{"at": 2, "ops": [{"op": "delete", "keys": [10], "how": "delete"}]}"#)
        let sweep = try api.sync(sweep: true).get()
        #expect(sweep.isComplete, "\(sweep.gaps)")
        #expect(try api.replica(name: "$.title.rendered") == api.live())
        #expect(sweep.counts.deleted == 1, "\(sweep.summary)")
    }

    /// A listing that moves on every read: after reading it three times the pass says it is
    /// incomplete (exit 2, a sweep owed), deletes nothing on its strength, and the next pass,
    /// reading a listing at rest, is whole.
    @Test func aListingThatKeepsMovingIsReportedIncomplete() throws {
        let api = try Self.wordpress(count: 300)
        defer { api.server.stop() }
        _ = try api.sync().get()
        for at in [2, 5, 8] {
            try api.admin("schedule", #"{"at": \#(at), "ops": [{"op": "delete", "keys": [\#(at * 10)], "how": "delete"}]}"#)
        }
        let moving = try api.sync(sweep: true).get()
        #expect(moving.gaps.contains { if case .listingMoved = $0 { true } else { false } }, "\(moving.gaps)")
        #expect(moving.counts.deleted == 0, "nothing deleted on a listing that moved: \(moving.summary)")
        let still = try api.sync().get()
        #expect(still.isComplete, "\(still.gaps)")
        #expect(try api.replica(name: "$.title.rendered") == api.live())
    }

    /// Microsoft Graph's delta lists a removed contact by its id and `@removed` alone, and a
    /// delta of deletions has no other entries: such a page deletes, where it used to fail the
    /// pass as a version-field that matches no record (exit 78).
    @Test func aPageOfDeletionsAloneDeletes() throws {
        let api = try API("msgraph", example: "msgraph.conf", origin: "https://graph.microsoft.com", credential: "graph-token",
                          store: "graph_items", count: 30, ids: ["FOLDER_ID": "AAMkADFerryContactsFolder="])
        defer { api.server.stop() }
        _ = try api.sync().get()
        try api.admin("delete", #"{"keys": [3, 4, 5]}"#)
        let deletions = try api.sync().get()
        #expect(deletions.isComplete && deletions.counts.deleted == 3, "\(deletions.summary)")
        #expect(try api.replica(name: "$.displayName") == api.live())
    }

    /// Notion rounds last_edited_time down to the minute: a page edited twice within one
    /// minute has one stamp for both edits. The second is found by the next pass (the filter
    /// includes the mark's minute; the merge tells the bodies apart), by a sweep, and by a
    /// rebuild, where it used to be lost for good with status ok.
    @Test func twoEditsInOneStampAreBothFound() throws {
        let api = try API("notion", example: "notion.conf", origin: "https://api.notion.com", credential: "notion-token",
                          store: "notion_pages", count: 30, ids: ["DATABASE_ID": "8a2f3c1e-5b7d-4e9f-a1c3-0d2e4f6a8b9c"])
        defer { api.server.stop() }
        let name = "$.properties.Name.title[0].plain_text"
        _ = try api.sync().get()
        try api.admin("clock", #"{"freeze": true}"#)
        for pass in [false, true] {
            try api.admin("update", #"{"keys": [7]}"#)
            _ = try api.sync(sweep: pass).get()
            try api.admin("update", #"{"keys": [7]}"#)
            let second = try api.sync(sweep: pass).get()
            #expect(second.counts.updated == 1, "sweep \(pass): \(second.summary)")
            #expect(try api.replica(name: name) == api.live(), "sweep \(pass)")
        }
    }

    /// Jira writes its stamps with a +0000 offset and reads JQL dates as yyyy-MM-dd HH:mm: the
    /// mark is written in that form (it used to go into the JQL as the stamp itself, and Jira
    /// answered every incremental pass with 400).
    @Test func jiraIsAskedForWhatChangedInTheFormItReads() throws {
        let api = try API("jira", example: "jira.conf", origin: "https://example.atlassian.net", credential: "jira-api-token",
                          store: "jira_issues", count: 30)
        defer { api.server.stop() }
        _ = try api.sync().get()
        _ = try api.sync().get() // the first sweep
        try api.admin("update", #"{"keys": [4, 9]}"#)
        let incremental = try api.sync().get()
        #expect(incremental.counts.updated == 2 && incremental.reconciliation == nil, "\(incremental.summary)")
        #expect(try api.replica(name: "$.fields.summary") == api.live())
    }

    /// Stripe's customers list has no filter: between sweeps, what changed comes from its
    /// events, one request when nothing did; created, updated and deleted customers all
    /// arrive, and a start Stripe no longer knows (events are kept 30 days) makes the pass
    /// list everything and sweep.
    @Test func stripeEventsCarryEveryChange() throws {
        let api = try API("stripe", example: "stripe.conf", origin: "https://api.stripe.com", credential: "stripe-secret-key",
                          store: "stripe_customers", count: 150)
        defer { api.server.stop() }
        var before = try api.requests()
        let first = try api.sync().get()
        #expect(first.isComplete && first.counts.inserted == 150)
        #expect(try api.requests() - before == 3, "the events' head, then two pages of customers")
        _ = try api.sync().get() // the first sweep
        try api.admin("create", #"{"count": 2}"#)
        try api.admin("update", #"{"keys": [3, 40, 41]}"#)
        try api.admin("delete", #"{"keys": [7, 8]}"#)
        before = try api.requests()
        let changes = try api.sync().get()
        #expect(changes.counts.inserted == 2 && changes.counts.updated == 3 && changes.counts.deleted == 2, "\(changes.summary)")
        #expect(try api.requests() - before == 1, "one page of events")
        #expect(try api.replica(name: "$.name") == api.live())
        before = try api.requests()
        let quiet = try api.sync().get()
        #expect(quiet.counts.inserted + quiet.counts.updated + quiet.counts.deleted == 0)
        #expect(try api.requests() - before == 1)
        try api.admin("update", #"{"keys": [5]}"#)
        try api.admin("delete", #"{"keys": [6]}"#)
        try api.admin("expire", "{}")
        let relisted = try api.sync().get()
        #expect(relisted.isComplete && relisted.reconciliation != nil, "\(relisted.summary)")
        #expect(try api.replica(name: "$.name") == api.live())
        before = try api.requests()
        _ = try api.sync().get()
        #expect(try api.requests() - before == 1, "events again, from the new head")
    }

    /// WordPress moves a deleted post to the trash, which the post listing leaves out: the
    /// trash, listed with the credentials, deletes them in the next pass, without a sweep.
    @Test func wordpressTrashIsReadAsDeletions() throws {
        let api = try Self.wordpress(count: 60)
        defer { api.server.stop() }
        _ = try api.sync().get()
        _ = try api.sync().get() // the first sweep
        try api.admin("delete", #"{"keys": [11, 12], "how": "trash"}"#)
        let before = try api.requests()
        let pass = try api.sync().get()
        #expect(pass.counts.deleted == 2 && pass.reconciliation == nil, "\(pass.summary)")
        #expect(try api.requests() - before == 2, "the posts since the mark, and the trash")
        #expect(try api.replica(name: "$.title.rendered") == api.live())
    }

    /// Feeds are checked when the configuration is loaded, each refusal naming the key.
    @Test(arguments: [
        (["changes.url": "https://api.example.com/events"], "changes.url", "changes.deleted-when"),
        (["changes.url": "https://api.example.com/events", "changes.deleted-when": "deleted", "deletions.url": "https://api.example.com/gone"],
         "changes.url", "not both"),
        (["deletions.url": "https://other.example.com/gone"], "deletions.url", "another origin"),
        (["changes.url": "https://api.example.com/events", "changes.deleted-when": "deleted", "changes.start": "ending_before=id"],
         "changes.start", "newest-first"),
        (["deletions.url": "https://api.example.com/gone", "deletions.pagination": "pgae:x"], "deletions.pagination", "did you mean page:"),
        (["changes.url": "https://api.example.com/events", "changes.deleted-when": "deleted", "changes.order": "sideways"], "changes.order",
         "newest-first"),
    ] as [([String: String], String, String)])
    func aFeedIsCheckedWhenLoaded(_ keys: [String: String], _ key: String, _ words: String) {
        do {
            _ = try configuredStore(kind: "json", url: "https://api.example.com/items", keys)
            Issue.record("\(keys) was accepted")
        } catch {
            let text = "\(error)"
            #expect(text.contains(key) && text.contains(words), "\(text)")
        }
    }

    /// Every shipped example of these eight APIs, run as shipped against its stand-in through
    /// rounds of changes, changes under a pass, coarse stamps, failures, rate limits, short
    /// pages and expired starts (`api_convergence.py`): every round ends with the replica
    /// equal to the API, and a pass with nothing changed costs no more requests than a careful
    /// client of the API's change feed.
    @Test(arguments: ["wordpress", "jira", "stripe", "notion", "github", "msgraph", "google", "hubspot"])
    func theShippedExampleConverges(_ api: String) throws {
        let script = TestServer.repositoryRoot.appendingPathComponent("Tests/Servers/api_convergence.py").path
        let outcome = try Shell.outcome("/usr/bin/env", ["python3", script, "--apis", api, "--ferry", TwoWayDriver.ferry])
        #expect(outcome.status == 0, "\(outcome.output.suffix(3_000))")
    }
}
