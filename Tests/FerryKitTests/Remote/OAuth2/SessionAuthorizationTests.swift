import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// A ``RemoteSession`` with an authorizer, whatever the kind above it: every request carries
/// the current token, a 401 is answered by a new token and the same request (method and body)
/// sent again once, and the owner sees only the answer to that second try.
@Suite("RemoteSession with an OAuth2 authorizer", .serialized)
struct SessionAuthorizationTests {
    let server: TestServer
    let configuration: SessionConfiguration

    init() throws {
        server = try TestServer.python("oauth2_server.py", arguments: ["--client-id", "ferry", "--client-secret", "s3cret", "--refresh-token", "r0"])
        var grant = OAuth2Grant(kind: .refreshToken, tokenURL: server.baseURL + "/token", clientID: "ferry", owner: "session_test")
        grant.clientSecret = Secret("s3cret", source: "test")
        grant.refreshToken = Secret("r0", source: "test")
        let directory = try TemporaryDirectory()
        let source = OAuth2TokenSource(grant: grant, file: RefreshTokenFile(databasePath: directory.path("ferry.db"), store: "session_test"),
                                       transport: SessionConfiguration())
        var configuration = SessionConfiguration()
        configuration.authorizer = SessionAuthorizer(source)
        self.configuration = configuration
    }

    func count(_ key: String) throws -> Int {
        let state = try JSONSerialization.jsonObject(with: try server.control("/admin/state")) as? [String: Any]
        return state?[key] as? Int ?? -1
    }

    @Test func a401IsAnsweredByANewTokenAndTheSameRequestOnce() throws {
        defer { server.stop() }
        // Each access token is good for one request: every request after the first meets a 401.
        _ = try server.control("/admin/config", method: "POST", body: #"{"die_after_requests": 1}"#)
        let body = Data(#"<sync-collection xmlns="DAV:"/>"#.utf8)
        let record = try RecordingFetch([
            HTTPRequest(url: server.baseURL + "/records"),
            HTTPRequest(method: "REPORT", url: server.baseURL + "/echo", body: body),
        ], configuration: configuration).runToCompletion()
        #expect(record.error == nil && record.head?.status == 200)
        #expect(record.events.filter { $0 == "head" }.count == 2, "the owner saw no 401: \(record.events)")
        let echoed = try JSONSerialization.jsonObject(with: record.body.suffix(from: record.body.lastIndex(of: UInt8(ascii: "{")) ?? 0)) as? [String: String]
        #expect(echoed == ["method": "REPORT", "body": #"<sync-collection xmlns="DAV:"/>"#])
        #expect(try count("resource_401") == 1 && count("token_requests") == 2)
    }

    @Test func aSecond401_reachesTheOwner() throws {
        defer { server.stop() }
        // Every token is refused at once (a server whose clock runs an hour ahead).
        _ = try server.control("/admin/config", method: "POST", body: #"{"early": 7200}"#)
        let record = try RecordingFetch(url: server.baseURL + "/records", configuration: configuration).runToCompletion()
        #expect(record.head?.status == 401)
        #expect(try count("resource_401") == 2 && count("token_requests") == 2)
    }
}
