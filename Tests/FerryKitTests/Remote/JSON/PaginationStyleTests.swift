import Foundation
import Logging
import Testing
@testable import FerryKit
import FerryTestSupport

/// Every pagination style against a server paged as the API it imitates documents it
/// (`json_pages_server.py`): a first sync reads every record and makes no request past the
/// end the API states, an incremental pass reads what changed, and a listing that moves while
/// it is read by position is reported, not silently short.
@Suite("JSON APIs paged by number, offset, last record and header", .serialized)
struct PaginationStyleTests {
    /// An API shape: its path and the keys that sync it.
    struct Shape: CustomTestStringConvertible, Sendable {
        var name: String
        var path: String
        var keys: [String: String]
        /// Requests a first sync of 250 records makes.
        var requests: Int
        var testDescription: String { name }
    }

    static let shapes: [Shape] = [
        // 250 items, 100 a page: 3 pages, X-WP-TotalPages says 3.
        Shape(name: "WordPress (page number, X-WP-TotalPages)", path: "/wp/posts",
              keys: ["pagination": "page:page", "page-size-param": "per_page", "page-size": "100"], requests: 3),
        // Asked for 100, capped at 50 by the server: 5 pages, the total ends it.
        Shape(name: "Jira (offset, total, capped page size)", path: "/jira/search",
              keys: ["pagination": "offset:startAt", "page-size-param": "maxResults", "page-size": "100",
                     "records-path": "issues", "total-path": "total"], requests: 5),
        // 100 a page, has_more false on the third.
        Shape(name: "Stripe (after the last id, has_more)", path: "/stripe/customers",
              keys: ["pagination": "after:starting_after=id", "page-size-param": "limit", "page-size": "100",
                     "records-path": "data", "has-more-path": "has_more"], requests: 3),
        Shape(name: "a cursor in a header", path: "/headercursor",
              keys: ["pagination": "header:cursor=X-Next-Cursor", "page-size-param": "limit", "page-size": "100"], requests: 3),
    ]

    struct Replica {
        let directory: TemporaryDirectory
        let configuration: FerryConfiguration

        init(url: String, keys: [String: String]) throws {
            directory = try TemporaryDirectory()
            let store = try configuredStore(kind: "json", url: url, keys)
            configuration = FerryConfiguration(global: GlobalConfiguration(databasePath: directory.path("replica.db"), runtimeDirectory: directory.path("run")),
                                               stores: [store])
        }

        func sync() throws -> PassReport {
            let sync = try OneShotSync(configuration: configuration, storeNames: [], logger: Logger(label: "test"))
            return try #require(try sync.run(refresh: .milliseconds(50)) { _ in }.first?.result.get())
        }

        func rows() throws -> Int {
            Int(try Shell.sqlite(directory.path("replica.db"), "SELECT count(*) FROM items WHERE deleted = 0").first ?? "") ?? -1
        }
    }

    static func requests(_ server: TestServer) throws -> Int {
        let stats = try JSONSerialization.jsonObject(with: server.control("/stats")) as? [String: Any]
        return stats?["requests"] as? Int ?? -1
    }

    @Test(arguments: shapes)
    func everyRecordIsReadAndNoPagePastTheEnd(_ shape: Shape) throws {
        let server = try TestServer.python("json_pages_server.py", arguments: ["--count", "250"])
        defer { server.stop() }
        let replica = try Replica(url: server.baseURL + shape.path, keys: shape.keys)
        let before = try Self.requests(server)
        let first = try replica.sync()
        #expect(first.isComplete, "\(first.gaps)")
        #expect(try replica.rows() == 250)
        #expect(try Self.requests(server) - before == shape.requests, "requests of a first sync")
        // Records changed and added: the next pass reads them (a full listing here: no
        // updated-param), and the replica has them all.
        _ = try server.control("/admin/update", method: "POST", body: #"{"ids":[7, 120]}"#)
        _ = try server.control("/admin/create", method: "POST", body: #"{"count":3}"#)
        let second = try replica.sync()
        #expect(second.isComplete, "\(second.gaps)")
        #expect(second.counts.inserted == 3 && second.counts.updated == 2, "\(second.summary)")
        #expect(try replica.rows() == 253)
    }

    /// An item added before the current position while pages are read by number: one record
    /// comes twice and the last is pushed a page further. The pass notices and reads the
    /// listing again from page 1 (3 pages, then 3 more), whole.
    @Test func aListingThatMovesWhilePagedByPositionIsReadAgain() throws {
        let server = try TestServer.python("json_pages_server.py", arguments: ["--count", "250"])
        defer { server.stop() }
        let keys = ["pagination": "page:page", "page-size-param": "per_page", "page-size": "100"]
        let replica = try Replica(url: server.baseURL + "/wp/posts", keys: keys)
        // The second page's request finds a new first record.
        let before = try Self.requests(server)
        _ = try server.control("/admin/prepend-at", method: "POST", body: #"{"request": \#(before + 2)}"#)
        let moved = try replica.sync()
        #expect(moved.isComplete, "\(moved.gaps)")
        #expect(try Self.requests(server) - before == 6, "the listing read twice")
        #expect(try replica.rows() == 251)
    }

    /// A page parameter the server does not know (`page:pgae`) gets page 1 again for page 2:
    /// the pass fails as a configuration error naming the key and its value, not as a listing
    /// that moved (which read it again on every pass and ended incomplete).
    @Test func aPageParameterTheServerIgnoresIsNamed() throws {
        let server = try TestServer.python("json_pages_server.py", arguments: ["--count", "250"])
        defer { server.stop() }
        for pagination in ["page:pgae", "offset:startAT"] {
            let replica = try Replica(url: server.baseURL + (pagination.hasPrefix("page") ? "/wp/posts" : "/jira/search"),
                                      keys: ["pagination": pagination, "page-size-param": pagination.hasPrefix("page") ? "per_page" : "maxResults",
                                             "page-size": "100"].merging(pagination.hasPrefix("page") ? [:] : ["records-path": "issues", "total-path": "total"]) { $1 })
            let before = try Self.requests(server)
            #expect {
                try replica.sync()
            } throws: { error in
                guard let error = error as? SyncError, error.kind == .configuration else { return false }
                return error.message.contains("pagination = \(pagination)")
            }
            #expect(try Self.requests(server) - before == 2, "page 1 and page 2, not the listing again")
        }
    }

    @Test func paginationFormsAreCheckedWhenLoaded() throws {
        for good in ["page:page", "offset:startAt", "after:starting_after=id", "header:cursor=X-Next-Cursor"] {
            #expect(throws: Never.self, "\(good)") { try configuredStore(kind: "json", url: "https://api.example.com/x", ["pagination": good]) }
        }
        for bad in ["page:", "offset:a=b", "after:starting_after", "after:x=name", "header:=X"] {
            #expect(throws: (any Error).self, "\(bad)") { try configuredStore(kind: "json", url: "https://api.example.com/x", ["pagination": bad]) }
        }
    }

    /// Tombstones the API lists (`deleted-when`) delete their rows in the incremental pass
    /// that reads them, with no sweep; a record whose member is false stays.
    @Test func deletionsTheAPIListsDeleteTheirRowsWithoutASweep() throws {
        let server = try TestServer.python("json_pages_server.py", arguments: ["--count", "30"])
        defer { server.stop() }
        let keys = ["pagination": "link", "page-size-param": "per_page", "page-size": "10", "updated-param": "since",
                    "deleted-when": "deleted", "reconcile-interval": "never"]
        let replica = try Replica(url: server.baseURL + "/link", keys: keys)
        _ = try replica.sync()
        #expect(try replica.rows() == 30)
        _ = try server.control("/admin/softdelete", method: "POST", body: #"{"ids":[3, 7]}"#)
        let pass = try replica.sync()
        #expect(pass.counts.deleted == 2, "\(pass.summary)")
        #expect(pass.reconciliation == nil, "no sweep")
        #expect(try replica.rows() == 28)
        #expect(DeletionTest("status = cancelled")?.matches(Data(#"{"id":"1","status":"cancelled"}"#.utf8)) == true)
        #expect(DeletionTest("status = cancelled")?.matches(Data(#"{"id":"1","status":"confirmed"}"#.utf8)) == false)
        #expect(DeletionTest("@removed")?.matches(Data(#"{"id":"1","@removed":{"reason":"deleted"}}"#.utf8)) == true)
        #expect(DeletionTest("deleted")?.matches(Data(#"{"id":"1","deleted":false}"#.utf8)) == false)
        #expect(DeletionTest("") == nil && DeletionTest("a = ") == nil)
    }

    /// Microsoft Graph's delta query: the next pass starts from the delta link the last page
    /// named and reads only what changed, removals included; when the API expired the link
    /// (410), the pass lists everything at once and sweeps what went meanwhile.
    @Test func aDeltaLinkStartsTheNextPassAndAnExpiredOneFallsBackToAFullListing() throws {
        let server = try TestServer.python("json_pages_server.py", arguments: ["--count", "25"])
        defer { server.stop() }
        let keys = ["records-path": "value", "pagination": #"next-url:@odata\.nextLink"#, "delta-link": #"@odata\.deltaLink"#,
                    "deleted-when": "@removed", "reconcile-interval": "never"]
        let replica = try Replica(url: server.baseURL + "/graph/delta?top=10", keys: keys)
        let first = try replica.sync()
        #expect(first.isComplete && first.pages == 3, "\(first.summary)")
        #expect(try replica.rows() == 25)
        _ = try server.control("/admin/update", method: "POST", body: #"{"ids":[2]}"#)
        _ = try server.control("/admin/softdelete", method: "POST", body: #"{"ids":[5]}"#)
        let before = try Self.requests(server)
        let delta = try replica.sync()
        #expect(try Self.requests(server) - before == 1, "one request: the delta link")
        #expect(delta.counts.updated == 1 && delta.counts.deleted == 1, "\(delta.summary)")
        #expect(try replica.rows() == 24)
        // The API forgets the delta state: the same pass lists everything and sweeps.
        _ = try server.control("/admin/expire-deltas", method: "POST", body: "{}")
        _ = try server.control("/admin/softdelete", method: "POST", body: #"{"ids":[9]}"#)
        let expired = try replica.sync()
        #expect(expired.isComplete, "\(expired.gaps)")
        #expect(expired.reconciliation != nil, "a sweep")
        #expect(try replica.rows() == 23)
        // And the next pass starts from the new delta link again.
        let afterwards = try Self.requests(server)
        _ = try replica.sync()
        #expect(try Self.requests(server) - afterwards == 1)
    }
}
