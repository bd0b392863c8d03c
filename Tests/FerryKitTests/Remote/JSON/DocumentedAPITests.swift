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
}
