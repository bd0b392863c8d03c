import Foundation
import Logging
import Testing
@testable import FerryKit
import FerryTestSupport

/// The panel of real API shapes: each example in `etc/ferry/examples/` as shipped (only its
/// origin replaced, its credentials given as systemd gives them), synced from a local server
/// that pages, filters and reports deletions as that API documents it (`api_shapes.py`), and
/// converging: after inserts, updates and deletes, and a failed request between them, the
/// replica holds exactly the server's live records at their versions. The examples of
/// WordPress, Jira, Stripe, Notion, GitHub's GraphQL, Microsoft Graph, Google Calendar and
/// HubSpot run against stand-ins written from each API's documentation instead
/// (``DocumentedAPITests``).
@Suite("A panel of real API shapes, from etc/ferry/examples", .serialized)
struct APIShapePanelTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var example: String
        var store: String
        /// What the example names, replaced by the local server's address (and path).
        var origin: String
        var localPath: String
        /// The shape `/admin/expected` answers for; "plain" for the server's own item form.
        var shape: String
        var credential: String
        /// Whether a delete is a tombstone the API reports (soft) or the record vanishing.
        var softDeletes: Bool
        var testDescription: String { example }
    }

    static let cases: [Case] = [
        Case(example: "gitlab.conf", store: "gitlab_issues", origin: "https://gitlab.example.com", localPath: "", shape: "gitlab", credential: "gitlab-token", softDeletes: true),
        Case(example: "shopify.conf", store: "shopify_products", origin: "https://SHOP.myshopify.com", localPath: "", shape: "shopify", credential: "shopify-token", softDeletes: true),
        Case(example: "zendesk.conf", store: "zendesk_tickets", origin: "https://example.zendesk.com", localPath: "", shape: "zendesk", credential: "zendesk-token", softDeletes: true),
        Case(example: "airtable.conf", store: "airtable_rows", origin: "https://api.airtable.com", localPath: "", shape: "airtable", credential: "airtable-token", softDeletes: true),
        Case(example: "salesforce.conf", store: "salesforce_accounts", origin: "https://example.my.salesforce.com", localPath: "", shape: "salesforce",
             credential: "salesforce-token", softDeletes: true),
    ]

    @Test(arguments: cases)
    func theReplicaConvergesOnTheServer(_ test: Case) throws {
        let server = try TestServer.python("json_pages_server.py", arguments: ["--count", "120"])
        defer { server.stop() }
        let example = try ExampleConfigurationTests.Example(test.example, origin: test.origin, local: server.baseURL + test.localPath,
                                                            credentials: [test.credential: "secret-\(test.credential)"])
        func sync(sweep: Bool = false) throws -> Result<PassReport, SyncError> {
            let sync = try OneShotSync(configuration: example.configuration, storeNames: [], databasePath: example.database, logger: Logger(label: "test"))
            sync.sweepNow = sweep
            return try #require(sync.run(refresh: .milliseconds(50)) { _ in }.first { $0.store == test.store }?.result)
        }
        func expected() throws -> Set<String> {
            let rows = try JSONSerialization.jsonObject(with: server.control("/admin/expected?shape=" + test.shape)) as? [[String]] ?? []
            return Set(rows.map { $0.joined(separator: "|") })
        }
        func replica() throws -> Set<String> {
            Set(try example.query("SELECT id, version FROM \(test.store) WHERE deleted = 0"))
        }
        func change(_ round: Int) throws {
            let base = round * 17
            _ = try server.control("/admin/update", method: "POST", body: #"{"ids":[\#(base + 3), \#(base + 50), \#(base + 90)]}"#)
            _ = try server.control("/admin/create", method: "POST", body: #"{"count":4}"#)
            for id in [base + 7, base + 60] {
                if test.softDeletes {
                    _ = try server.control("/admin/softdelete", method: "POST", body: #"{"ids":[\#(id)]}"#)
                } else {
                    _ = try server.control("/items/\(id)", method: "DELETE")
                }
            }
        }

        let first = try sync().get()
        #expect(first.isComplete, "\(test.example): \(first.gaps)")
        #expect(try replica() == expected(), "\(test.example): first sync")
        #expect(try replica().count == 120)
        for round in 0..<2 {
            try change(round)
            // A request that fails between the changes (a 503, then the API's own "too many
            // requests": a 429, Google's and Salesforce's 403, GraphQL's RATE_LIMITED): that
            // pass waits it out or fails as rate-limited, never as refused access, and the
            // next one (which sweeps where the API reports no deletions) converges.
            let status = round == 0 ? 503 : 429
            _ = try server.control("/admin/fail-next", method: "POST", body: #"{"count":1,"status":\#(status)}"#)
            if case .failure(let error) = try sync(), status == 429 {
                #expect(error.kind == .rateLimited, "\(test.example): the API's rate limit was taken for \(error.kind): \(error.message)")
            }
            let after = try sync(sweep: true).get()
            #expect(after.isComplete, "\(test.example) round \(round): \(after.gaps)")
            let want = try expected()
            let have = try replica()
            #expect(have == want, "\(test.example) round \(round): missing \(want.subtracting(have).sorted().prefix(5)), extra \(have.subtracting(want).sorted().prefix(5))")
        }
    }
}
