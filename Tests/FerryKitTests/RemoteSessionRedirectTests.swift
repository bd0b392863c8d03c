import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// Redirects as the session follows them, against a loopback server that answers with the
/// request it received (`/echo`): a REPORT keeps its method and body, and credentials stay on
/// the origin they were configured for.
@Suite("RemoteSession redirects")
final class RemoteSessionRedirectTests {
    let server: TestServer

    init() throws {
        server = try TestServer.fault()
    }

    deinit {
        server.stop()
    }

    /// A REPORT to `/redirect-to` that sends it on to `location` with `status`.
    func report(redirectedTo location: String, status: Int) -> HTTPRequest {
        var headers = HTTPHeaders()
        headers.set("Authorization", "Basic ZmVycnk6c2VjcmV0")
        headers.setCredential("X-Api-Key", "key-1")
        headers.set("Content-Type", "application/xml; charset=utf-8")
        headers.set("Depth", "0")
        let target = location.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? location
        return HTTPRequest(method: "REPORT", url: server.baseURL + "/redirect-to?status=\(status)&url=\(target)",
                           headers: headers, body: Data("<D:sync-collection xmlns:D=\"DAV:\"/>".utf8))
    }

    struct Echo: Decodable {
        var method: String
        var path: String
        var body: String
        var headers: [String: String]
    }

    func echo(_ record: FetchRecord) throws -> Echo {
        try JSONDecoder().decode(Echo.self, from: record.body)
    }

    @Test(arguments: [301, 302, 307, 308])
    func aRedirectedREPORTKeepsItsMethodBodyAndCredentials(_ status: Int) throws {
        let record = try RecordingFetch([report(redirectedTo: "/echo", status: status)]).runToCompletion()
        #expect(record.error == nil, "\(String(describing: record.error))")
        let echo = try echo(record)
        #expect(echo.method == "REPORT" && echo.path == "/echo")
        #expect(echo.body == "<D:sync-collection xmlns:D=\"DAV:\"/>")
        #expect(echo.headers["authorization"] != nil && echo.headers["x-api-key"] == "key-1" && echo.headers["depth"] == "0")
        let head = try #require(record.head)
        #expect(head.status == 200 && head.url == server.baseURL + "/echo")
        #expect(head.redirects == 1 && head.isPermanentlyRedirected == (status == 301 || status == 308))
        #expect(!head.credentialsWithheld)
        // One head: the redirect itself never reaches the owner.
        #expect(record.events.filter { $0 == "head" }.count == 1)
    }

    @Test func a303IsFollowedWithGET() throws {
        let record = try RecordingFetch([report(redirectedTo: "/echo", status: 303)]).runToCompletion()
        let echo = try echo(record)
        #expect(echo.method == "GET" && echo.body.isEmpty && echo.headers["depth"] == nil)
        #expect(echo.headers["authorization"] != nil)
    }

    @Test func anotherOriginGetsNoCredentials() throws {
        // localhost is another host than 127.0.0.1, so another origin, on the same server.
        let record = try RecordingFetch([report(redirectedTo: "http://localhost:\(server.port)/echo", status: 307)]).runToCompletion()
        let echo = try echo(record)
        #expect(echo.method == "REPORT" && !echo.body.isEmpty)
        #expect(echo.headers["authorization"] == nil && echo.headers["x-api-key"] == nil)
        #expect(echo.headers["content-type"] != nil)
        #expect(record.head?.credentialsWithheld == true)
    }

    @Test func httpsToHTTPIsRefused() throws {
        let tls = try TLSSessionTests.makeCertificate()
        let secure = try TestServer.fault(tls: tls)
        defer { secure.stop() }
        var configuration = SessionConfiguration()
        configuration.caFile = tls.cert
        let location = (server.baseURL + "/echo").addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let request = HTTPRequest(url: "https://127.0.0.1:\(secure.port)/redirect-to?status=301&url=\(location)")
        let record = try RecordingFetch([request], configuration: configuration).runToCompletion()
        #expect(record.error?.kind == .insecureRedirect, "\(String(describing: record.error))")
        #expect(record.head == nil && record.body.isEmpty)
        let stats = try JSONSerialization.jsonObject(with: server.control("/stats")) as? [String: Any]
        #expect((stats?["paths"] as? [String: Int])?["/echo"] == nil, "nothing was sent in clear")
    }

    @Test func aRedirectChainIsOneTaskToTheEnd() throws {
        let record = try RecordingFetch([HTTPRequest(url: server.baseURL + "/redirect/4")]).runToCompletion()
        #expect(record.error == nil)
        #expect(record.head?.redirects == 4 && record.head?.isPermanentlyRedirected == false)
        #expect(record.events.first == "head" && record.events.last == "complete")
        #expect(record.events.filter { $0 == "head" }.count == 1)
        #expect(record.offLoopCallbacks == 0 && record.callbacksAfterCancel == 0)
    }
}
