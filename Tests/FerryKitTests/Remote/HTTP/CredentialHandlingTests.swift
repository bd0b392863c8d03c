import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// Credentials go where the configuration sends them and nowhere else: configured secret
/// headers and query parameters are sent, a pagination link to another origin is followed
/// without them, and no secret reaches an error, the journal's text, status or a cursor.
@Suite("Credentials stay where they belong", .serialized)
struct CredentialHandlingTests {
    static let key = "k3y-VALUE-never-shown"
    static let token = "t0ken-VALUE-never-shown"

    /// A directory holding the two secrets, readable by their owner only.
    static func secrets() throws -> TemporaryDirectory {
        let directory = try TemporaryDirectory("ferry-credentials")
        for (name, value) in [("key", key), ("token", token)] {
            let path = directory.path(name)
            try Data(value.utf8).write(to: URL(fileURLWithPath: path))
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        }
        return directory
    }

    static func store(_ url: String, _ secrets: TemporaryDirectory, extra: [String: String] = [:]) throws -> StoreConfiguration {
        try configuredStore(kind: "json", url: url, [
            "records-path": "results", "pagination": "next-url:next", "bearer-token": "file:\(secrets.path("token"))",
            "header.X-Api-Key": "file:\(secrets.path("key"))", "query.api_key": "file:\(secrets.path("key"))", "query.state": "all",
        ].merging(extra) { $1 })
    }

    /// The echoed request of each record, by id.
    static func echoes(_ database: SharedDatabase) throws -> [String: [String: Any]] {
        let rows = try database.write { try $0.connection.textRows("SELECT body FROM items ORDER BY id") }
        var result: [String: [String: Any]] = [:]
        for row in rows {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(row.utf8)) as? [String: Any])
            result[object["id"] as? String ?? ""] = object
        }
        return result
    }

    static func header(_ echo: [String: Any]?, _ name: String) -> String? {
        (echo?["headers"] as? [String: Any])?.first { $0.key.lowercased() == name.lowercased() }?.value as? String
    }

    @Test func secretHeadersAndParametersAreSent_andAnotherOriginGetsNone() throws {
        let home = try TestServer.fault()
        let elsewhere = try TestServer.fault()
        let secrets = try Self.secrets()
        let directory = try TemporaryDirectory()
        let database = try SharedDatabase(path: directory.path("replica.db"))
        defer { database.close() }
        let next = URLQuery.encode(elsewhere.baseURL + "/echo-page?id=2")
        let store = try Self.store(home.baseURL + "/echo-page?id=1&next=\(next)", secrets)
        let report = try IncompletePassTests.pass(store, database).get()
        #expect(report.counts.inserted == 2)
        let echoes = try Self.echoes(database)
        let first = echoes["1"], second = echoes["2"]
        #expect(Self.header(first, "Authorization") == "Bearer \(Self.token)")
        #expect(Self.header(first, "X-Api-Key") == Self.key)
        #expect((first?["query"] as? String)?.contains("api_key=\(Self.key)") == true)
        #expect((first?["query"] as? String)?.contains("state=all") == true)
        // The next page lives on another origin: asked for without any credential.
        #expect(Self.header(second, "Authorization") == nil)
        #expect(Self.header(second, "X-Api-Key") == nil)
        #expect((second?["query"] as? String)?.contains(Self.key) == false)
        // Nothing stored about the store carries a secret.
        let state = try #require(try database.write { try $0.syncState(of: "items") })
        #expect(!(state.cursor ?? "").contains(Self.key))
    }

    /// A redirect is a link the server chose: followed with the credentials on the store's
    /// own origin, without them anywhere else (an API that sends its downloads to a CDN).
    @Test func aRedirectToAnotherOriginGetsNoCredentials() throws {
        let home = try TestServer.fault()
        let elsewhere = try TestServer.fault()
        let secrets = try Self.secrets()
        let directory = try TemporaryDirectory()
        let database = try SharedDatabase(path: directory.path("replica.db"))
        defer { database.close() }
        // Page 1 redirects (307) to page 1 on the same origin; its next page redirects (302)
        // to page 2 on another origin.
        let page2 = URLQuery.encode(home.baseURL + "/redirect-to?status=302&url=" + URLQuery.encode(elsewhere.baseURL + "/echo-page?id=2"))
        let page1 = URLQuery.encode(home.baseURL + "/echo-page?id=1&next=\(page2)")
        let store = try Self.store(home.baseURL + "/redirect-to?status=307&url=\(page1)", secrets)
        let report = try IncompletePassTests.pass(store, database).get()
        #expect(report.counts.inserted == 2 && report.isComplete, "\(report.gaps)")
        let echoes = try Self.echoes(database)
        #expect(Self.header(echoes["1"], "Authorization") == "Bearer \(Self.token)")
        #expect(Self.header(echoes["1"], "X-Api-Key") == Self.key)
        #expect(Self.header(echoes["2"], "Authorization") == nil)
        #expect(Self.header(echoes["2"], "X-Api-Key") == nil)
    }

    @Test func noSecretReachesAnErrorOrStatus() throws {
        let server = try TestServer.fault()
        let secrets = try Self.secrets()
        let directory = try TemporaryDirectory()
        let database = try SharedDatabase(path: directory.path("replica.db"))
        defer { database.close() }
        // A server that echoes the key in its error page, at a URL that carries it.
        let store = try Self.store(server.baseURL + "/status/500?body=" + URLQuery.encode("bad key \(Self.key) sent"), secrets,
                                   extra: ["pagination": "none"])
        guard case .failure(let error) = try IncompletePassTests.pass(store, database) else {
            Issue.record("the 500 did not fail the pass")
            return
        }
        #expect(error.kind == .httpStatus(500))
        for text in [error.description, error.url, error.message, String(reflecting: error)] {
            #expect(!text.contains(Self.key) && !text.contains(Self.token), "\(text)")
        }
        let state = try #require(try database.write { try $0.syncState(of: "items") })
        #expect(state.lastError?.contains("REDACTED") == true || state.lastError?.contains("<redacted>") == true, "\(state.lastError ?? "")")
        #expect(!(state.lastError ?? "").contains(Self.key))
    }

    @Test func aURLWithACredentialInItsQueryIsRefused() {
        #expect(throws: ConfigurationErrors(problems: [.init(file: "/test/ferry.conf", line: 3, key: "url",
            message: "the URL carries a credential in its query (api_key=...); remove it and write query.api_key = credential:NAME")])) {
            try configuredStore(kind: "json", url: "https://api.example.com/items?api_key=\(Self.key)&state=all")
        }
    }
}
