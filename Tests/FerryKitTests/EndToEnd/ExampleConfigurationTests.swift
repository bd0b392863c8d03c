import Foundation
import Logging
import Testing
@testable import FerryKit
import FerryTestSupport

/// The examples in `etc/ferry/examples/`, each loaded as shipped (only the server's address
/// replaced, credentials given as systemd would give them) and run as `ferry sync` runs it,
/// against a local server that answers like the real one.
@Suite("etc/ferry/examples against servers that answer like the real ones", .serialized)
struct ExampleConfigurationTests {
    /// The example `name`, its `origin` replaced by `local`, loaded with `credentials` in a
    /// credentials directory (`$CREDENTIALS_DIRECTORY`, as `LoadCredential=` makes it).
    struct Example {
        let directory: TemporaryDirectory
        let configuration: FerryConfiguration
        var database: String { directory.path("replica.db") }

        /// `replacing`: the placeholders the example leaves to its user (`DATABASE_ID`), and what
        /// the local server calls them.
        init(_ name: String, origin: String, local: String, credentials: [String: String], replacing placeholders: [String: String] = [:]) throws {
            directory = try TemporaryDirectory()
            let shipped = try String(contentsOf: TestServer.repositoryRoot.appendingPathComponent("etc/ferry/examples/\(name)"), encoding: .utf8)
            #expect(shipped.contains(origin), "the example names \(origin)")
            let path = directory.path(name)
            var text = shipped.replacingOccurrences(of: origin, with: local)
            for (placeholder, value) in placeholders {
                #expect(text.contains(placeholder), "the example names \(placeholder)")
                text = text.replacingOccurrences(of: placeholder, with: value)
            }
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            let store = directory.path("credentials")
            try FileManager.default.createDirectory(atPath: store, withIntermediateDirectories: true)
            for (key, value) in credentials {
                try value.write(toFile: store + "/" + key, atomically: true, encoding: .utf8)
                chmod(store + "/" + key, 0o600)
            }
            configuration = try ConfigurationLoader.load(path: path, environment: ["CREDENTIALS_DIRECTORY": store, "STATE_DIRECTORY": directory.path("state")])
        }

        func sync() throws -> [String: Result<PassReport, SyncError>] {
            let sync = try OneShotSync(configuration: configuration, storeNames: [], databasePath: database, logger: Logger(label: "test"))
            return Dictionary(sync.run(refresh: .milliseconds(50)) { _ in }.map { ($0.store, $0.result) }, uniquingKeysWith: { first, _ in first })
        }

        func query(_ sql: String) throws -> [String] {
            try Shell.sqlite(database, sql)
        }
    }

    @Test func githubIssues() throws {
        let server = try TestServer.python("github_api.py", arguments: ["--token", "ghp_example", "--issues", "250"])
        defer { server.stop() }
        let example = try Example("github-issues.conf", origin: "https://api.github.com", local: server.baseURL,
                                  credentials: ["github-token": "ghp_example"])
        func requests() throws -> [[String: Any]] {
            try JSONSerialization.jsonObject(with: try server.control("/admin/requests")) as? [[String: Any]] ?? []
        }

        // Every issue, open and closed, in pages of 100 followed by their Link headers.
        let first = try #require(try example.sync()["github_issues"]?.get())
        #expect(first.counts.inserted == 250 && first.pages == 3)
        #expect(try example.query("SELECT number, state, author FROM github_issues WHERE number IN (4, 5) ORDER BY number")
            == ["4|closed|user-1", "5|open|user-2"])
        let firstRequests = try requests()
        #expect(firstRequests.count == 3)
        for request in firstRequests {
            let query = request["query"] as? [String: String] ?? [:]
            #expect(query["state"] == "all" && query["sort"] == "updated" && query["direction"] == "asc" && query["per_page"] == "100")
            #expect(request["auth"] as? String == "Bearer ghp_example")
        }

        // Two issues edited. The next pass is also the first sweep (ferry sync sweeps when the
        // last one is older than reconcile-interval, and there was none): it reads every page
        // without since. The one after asks since the newest updated_at stored.
        _ = try server.control("/admin/update", method: "POST", body: #"{"numbers":[5,7]}"#)
        let second = try #require(try example.sync()["github_issues"]?.get())
        #expect(second.counts.updated == 2 && second.counts.inserted == 0 && second.reconciliation == .swept(deleted: 0))
        #expect(try example.query("SELECT title FROM github_issues WHERE number = 7") == ["Issue 7, edited"])
        _ = try server.control("/admin/update", method: "POST", body: #"{"numbers":[8]}"#)
        let seen = try requests().count
        let third = try #require(try example.sync()["github_issues"]?.get())
        #expect(third.counts.updated == 1 && third.pages == 1)
        let asked = try requests().dropFirst(seen).first?["query"] as? [String: String]
        #expect(asked?["since"] == "2024-01-01T04:12:00Z", "the newest updated_at stored: \(String(describing: asked))")

        // ferryd's scheduled passes send the first page's ETag back once the high-water mark
        // stands still: the first after a change asks since the new mark (GitHub's since is
        // inclusive, so it reads the newest issue again, a no-op), the next gets a 304, one
        // request, nothing against the rate limit.
        let store = try #require(example.configuration.stores.first)
        let cursor = try #require(try example.query("SELECT cursor FROM ferry_sync_state WHERE store = 'github_issues'").first)
        let settling = try SourceRun(store: store, plan: PassPlan(cursor: cursor, reconcile: false)).runToCompletion()
        #expect(settling.error == nil && settling.records.count == 1)
        let scheduled = try SourceRun(store: store, plan: PassPlan(cursor: settling.finalCursor, reconcile: false)).runToCompletion()
        #expect(scheduled.outcome?.unchanged == true && scheduled.outcome?.requests == 1)
        #expect(try requests().last?["if_none_match"] is String)

        // The rate limit used up: the pass fails as rate limited, waiting for the reset.
        _ = try server.control("/admin/ratelimit", method: "POST", body: #"{"remaining":0,"reset_in":120}"#)
        _ = try server.control("/admin/update", method: "POST", body: #"{"numbers":[9]}"#)
        guard case .failure(let limited)? = try example.sync()["github_issues"] else {
            Issue.record("a pass past the rate limit succeeded")
            return
        }
        #expect(limited.kind == .rateLimited)
        #expect(limited.retryAfter.map { $0 > .seconds(60) } == true, "\(String(describing: limited.retryAfter))")
        #expect(!limited.description.contains("ghp_example"))
    }

    @Test func parseApp() throws {
        let parse = try ParseTestServer.start(arguments: ["--app-id", "my-app-id"])
        try parse.admin("seed", ["class": "Quote", "count": 30, "seed": 6])
        let example = try Example("parse-app.conf", origin: "https://parse.example.com/parse", local: parse.mount,
                                  credentials: ["parse-rest-key": "rest-secret"])
        let first = try #require(try example.sync()["quotes"]?.get())
        #expect(first.counts.inserted == 30)
        #expect(try example.query("SELECT count(*) FROM quotes WHERE author IS NOT NULL") == ["30"])

        // Two-way: a row written with SQL reaches Parse with the next pass.
        _ = try example.query(#"UPDATE quotes SET body = json_set(body, '$.text', 'edited with SQL') WHERE n = 3"#)
        let second = try #require(try example.sync()["quotes"]?.get())
        #expect(second.push.pushed == 1 && second.isComplete)
        #expect(try parse.dump().contains { $0["n"] as? Int == 3 && $0["text"] as? String == "edited with SQL" })
    }

    @Test(.enabled(if: DAVServer.Kind.sabredav.shouldRun, "sabre/dav not installed: apt-get install php-sabre-dav php-sqlite3 (bash scripts/test.sh does)"))
    func nextcloudAccount() throws {
        // sabre/dav, the engine inside Nextcloud (1.8: without sync-collection, so every
        // collection is listed by PROPFIND).
        let dav = try DAVServer(.sabredav, cards: 6, events: 3)
        defer { dav.stop() }
        var text = try String(contentsOf: TestServer.repositoryRoot.appendingPathComponent("etc/ferry/examples/nextcloud.conf"), encoding: .utf8)
        text = text.replacingOccurrences(of: "username = alice", with: "username = \(DAVServer.username)")
        let directory = try TemporaryDirectory()
        let adapted = directory.path("nextcloud.conf")
        try text.replacingOccurrences(of: "https://cloud.example.com/", with: dav.baseURL + "/").write(toFile: adapted, atomically: true, encoding: .utf8)
        try DAVServer.password.write(toFile: directory.path("nextcloud-app-password"), atomically: true, encoding: .utf8)
        chmod(directory.path("nextcloud-app-password"), 0o600)
        let configuration = try ConfigurationLoader.load(path: adapted, environment: ["CREDENTIALS_DIRECTORY": directory.path(""), "STATE_DIRECTORY": directory.path("state")])
        let sync = try OneShotSync(configuration: configuration, storeNames: [], databasePath: directory.path("replica.db"), logger: Logger(label: "test"))
        var reports: [String: PassReport] = [:]
        let results = sync.run(refresh: .milliseconds(50)) { _ in }
        for (store, result) in results { reports[store] = try result.get() }
        #expect(reports["nextcloud"]?.collections == 2)
        #expect(reports["nextcloud__contacts"]?.counts.inserted == 6)
        // The generated events are in January 2024, long before the range.
        #expect(reports["nextcloud__calendar"]?.recordCount == 0)
        #expect(reports.values.allSatisfy { $0.isComplete })
    }
}
