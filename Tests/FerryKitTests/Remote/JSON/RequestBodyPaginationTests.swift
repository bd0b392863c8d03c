import Foundation
import Logging
import Testing
@testable import FerryKit
import FerryTestSupport

/// APIs asked with a POST body (Notion's database query, GraphQL) and filters written as
/// templates: every record is read, the cursor travels in the body, incremental passes send
/// the mark as the filter wants it, and an edit in the mark's second is not lost where the
/// API's filter counts whole seconds (`look-back`).
@Suite("JSON APIs asked with a POST body, and filters as templates", .serialized)
struct RequestBodyPaginationTests {
    typealias Replica = PaginationStyleTests.Replica

    static func server(count: Int = 250) throws -> TestServer {
        try TestServer.python("json_pages_server.py", arguments: ["--count", "\(count)"])
    }

    static let notion: [String: String] = [
        "request-body": #"{"page_size": {page_size}, "start_cursor": {cursor}, "filter": {"timestamp": "last_edited_time", "last_edited_time": {"on_or_after": "{since}"}}}"#,
        "pagination": "body:next_cursor", "has-more-path": "has_more", "records-path": "results",
        "version-field": "last_edited_time", "page-size": "100",
    ]

    static let graphQL: [String: String] = [
        "request-body": #"{"query": "query($first: Int, $after: String, $since: String) { items(first: $first, after: $after, updatedAfter: $since) { nodes { id updatedAt name } pageInfo { hasNextPage endCursor } } }", "variables": {"first": {page_size}, "after": {cursor}, "since": "{since}"}}"#,
        "pagination": "body:data.items.pageInfo.endCursor", "has-more-path": "data.items.pageInfo.hasNextPage",
        "records-path": "data.items.nodes", "version-field": "updatedAt", "page-size": "100",
    ]

    @Test(arguments: [("Notion", "/notion/query", notion), ("GraphQL", "/graphql", graphQL)])
    func everyRecordIsRead_andChangesReachTheReplica(_ name: String, _ path: String, _ keys: [String: String]) throws {
        let server = try Self.server()
        defer { server.stop() }
        let replica = try Replica(url: server.baseURL + path, keys: keys)
        let before = try PaginationStyleTests.requests(server)
        let first = try replica.sync()
        #expect(first.isComplete, "\(name): \(first.gaps)")
        #expect(try replica.rows() == 250, "\(name)")
        #expect(try PaginationStyleTests.requests(server) - before == 3, "\(name): 3 pages of 100, none past the end")
        _ = try server.control("/admin/update", method: "POST", body: #"{"ids":[7, 120]}"#)
        _ = try server.control("/admin/create", method: "POST", body: #"{"count":3}"#)
        let second = try replica.sync()
        #expect(second.isComplete)
        #expect(try replica.rows() == 253, "\(name)")
        #expect(second.counts.inserted == 3 && second.counts.updated >= 2, "\(name): \(second.summary)")
    }

    /// GraphQL answers a query it cannot run with 200 and `errors`: the pass fails saying so,
    /// it does not store an empty collection.
    @Test func aGraphQLErrorFailsThePass() throws {
        let server = try Self.server(count: 5)
        defer { server.stop() }
        var keys = Self.graphQL
        keys["request-body"] = #"{"query": "{ nothing }", "variables": {"after": {cursor}}}"#
        let replica = try Replica(url: server.baseURL + "/graphql", keys: keys)
        let sync = try OneShotSync(configuration: replica.configuration, storeNames: [], logger: Logger(label: "test"))
        let result = try #require(sync.run(refresh: .milliseconds(50)) { _ in }.first?.result)
        guard case .failure(let error) = result else { Issue.record("a GraphQL error was taken for an empty page: \(result)"); return }
        #expect(error.description.contains("Cannot query field"), "\(error)")
    }

    /// WordPress's `modified_after` counts whole seconds and is exclusive: an edit in the mark's
    /// second is never "after" it. With `look-back = 1s` the pass asks again for that second.
    @Test(arguments: [false, true])
    func anEditInTheMarksSecondIsFoundWithALookBack(_ lookBack: Bool) throws {
        let server = try Self.server(count: 20)
        defer { server.stop() }
        var keys = ["pagination": "page:page", "page-size-param": "per_page", "page-size": "100",
                    "updated-param": "modified_after", "since-format": "yyyy-MM-dd'T'HH:mm:ss", "reconcile-interval": "1d"]
        if lookBack { keys["look-back"] = "1s" }
        let replica = try Replica(url: server.baseURL + "/wp/posts", keys: keys)
        _ = try replica.sync()
        _ = try replica.sync()  // the first sweep; the next pass is incremental
        _ = try server.control("/admin/update", method: "POST", body: #"{"ids":[3]}"#)
        let after = try replica.sync()
        // Every stamp of the server falls in one second: only the look-back finds the edit.
        #expect((after.counts.updated == 1) == lookBack, "look-back \(lookBack): \(after.summary)")
    }

    /// Jira's JQL names the mark inside a parameter: the template is filled with the mark on
    /// an incremental pass and with the earliest time when listing everything.
    @Test func aFilterTemplateInAParameterCarriesTheMark() throws {
        let server = try TestServer.fault()
        defer { server.stop() }
        var store = try configuredStore(kind: "json", url: server.baseURL + "/echo-page", [
            "since-param": #"jql=project = KAN AND updated >= "{since}" ORDER BY updated"#,
            "since-format": "yyyy-MM-dd HH:mm", "since-timezone": "+02:00", "look-back": "1m", "pagination": "none",
        ])
        store.reconcileInterval = nil
        let options = try #require(store.options.as(JSONCollectionOptions.self))
        let since = try options.since.render("2024-03-05T10:15:30Z")
        #expect(since == "2024-03-05 12:14", "the mark less a minute, in +02:00")
        #expect(try options.since.render(nil) == "1970-01-01 02:00")
        // Jira's own stamps carry their offset in ISO 8601's basic form.
        #expect(try options.since.render("2024-03-05T10:15:30.237+0000") == "2024-03-05 12:14")
        #expect(options.sinceParam?.value(since) == #"project = KAN AND updated >= "2024-03-05 12:14" ORDER BY updated"#)
    }

    /// Every form of mark the APIs document, written as the filter wants it; nil: the mark is
    /// no time, and the pass fails naming it rather than send it as it is.
    @Test(arguments: [
        ("2024-01-01T00:00:00.000250", SinceValue(format: .iso8601, lookBack: .seconds(1)), "2023-12-31T23:59:59.000250Z"),
        ("1700000000", SinceValue(lookBack: .seconds(60)), "1699999940"),
        ("1700000000123", SinceValue(format: .unixMilliseconds), "1700000000123"),
        ("2024-03-05T10:15:30+01:00", SinceValue(format: .unix), "1709630130"),
        ("2024-03-05T10:15:30+0100", SinceValue(format: .unix), "1709630130"),
        ("2024-03-05T10:15:30.237+0000", SinceValue(format: .unix), "1709633730"),
        ("2024-03-05T10:15:30-05", SinceValue(format: .unix), "1709651730"),
        ("2024-03-05 10:15:30 +0000", SinceValue(format: .unix), "1709633730"),
        ("2024-03-05T10:15:30.1234567Z", SinceValue(format: .iso8601), "2024-03-05T10:15:30.123457Z"),
        ("2024-03-05T10:15Z", SinceValue(format: .iso8601), "2024-03-05T10:15:00Z"),
        ("2024-03-05", SinceValue(format: .pattern("dd.MM.yyyy")), "05.03.2024"),
        // A pattern writes the time in the zone the API wrote the mark in (Jira's user's zone),
        // unless since-timezone says otherwise; a mark without a zone is UTC.
        ("2024-03-05T10:15:30.237-0500", SinceValue(format: .pattern("yyyy-MM-dd HH:mm"), lookBack: .seconds(60)), "2024-03-05 10:14"),
        ("2024-03-05T10:15:30.237-0500", SinceValue(format: .pattern("yyyy-MM-dd HH:mm"), timeZone: TimeZone(identifier: "UTC")), "2024-03-05 15:15"),
        ("2024-03-05T10:15:30", SinceValue(format: .pattern("yyyy-MM-dd HH:mm"), lookBack: .seconds(60)), "2024-03-05 10:14"),
        ("opaque-v7", SinceValue(format: .iso8601), nil),
        ("2024-13-05T10:15:30Z", SinceValue(format: .iso8601), nil),
        ("2024-03-05T10:15:30+0000 trailing", SinceValue(lookBack: .seconds(1)), nil),
        ("opaque-v7", SinceValue(), "opaque-v7"),
        ("2024-03-05T10:15:30Z", SinceValue(), "2024-03-05T10:15:30Z"),
    ] as [(String, SinceValue, String?)])
    func theMarkIsWrittenAsTheFilterWantsIt(_ mark: String, _ since: SinceValue, _ expected: String?) {
        #expect((try? since.render(mark)) == expected)
    }

    @Test func theBodyTemplateLeavesOutACursorItDoesNotHave_andEscapesWhatItFills() throws {
        let template = try #require(RequestBodyTemplate(#"{"start_cursor": {cursor}, "q": "after \"{since}\"", "size": {page_size}, "list": [{cursor}]}"#))
        let first = try JSONSerialization.jsonObject(with: template.render(cursor: nil, since: "a\"b", pageSize: 50)) as? [String: Any]
        #expect(first?["start_cursor"] == nil)
        #expect(first?["q"] as? String == "after \"a\"b\"")
        #expect(first?["size"] as? Int == 50)
        #expect((first?["list"] as? [Any])?.first is NSNull)
        let next = try JSONSerialization.jsonObject(with: template.render(cursor: "c\"2", since: "s", pageSize: 50)) as? [String: Any]
        #expect(next?["start_cursor"] as? String == "c\"2")
        #expect(RequestBodyTemplate("not json {cursor}") == nil)
        #expect(RequestBodyTemplate("[{cursor}]") == nil, "a body is an object")
    }

    @Test(arguments: [
        (["pagination": "body:next_cursor"], "pagination", "request-body"),
        (["request-body": #"{"a": {cursor}}"#], "request-body", "only pagination = body:PATH"),
        (["request-body": "{nope"], "request-body", "is not a JSON object"),
        (["since-param": "jql=updated > x"], "since-param", "{since}"),
        (["since-format": "weekly"], "since-format", "date pattern"),
        (["since-timezone": "Mars/Olympus"], "since-timezone", "Europe/Berlin"),
        (["updated-param": "since", "since-param": "q={since}"], "since-param", "not both"),
    ])
    func aWrongKeyIsRefusedAtLoad(_ keys: [String: String], _ key: String, _ words: String) {
        Self.expectRefusedAtLoad(keys, key, words)
    }

    /// A JSON store's section with `keys` (and the `fixed` lines) fails to load, and the
    /// problem of `key` says `words`.
    static func expectRefusedAtLoad(_ keys: [String: String], _ key: String, _ words: String, with fixed: [String] = []) {
        let lines = ["[store items]", "kind = json", "url = https://api.example.com/items"] + fixed + keys.map { "\($0.key) = \($0.value)" }
        do {
            _ = try ConfigurationLoader.parse(text: lines.joined(separator: "\n"), file: "/test/ferry.conf", environment: [:])
            Issue.record("accepted: \(keys)")
        } catch {
            let problem = error.problems.first { $0.key == key }
            #expect(problem?.message.contains(words) == true, "\(error)")
        }
    }
}
