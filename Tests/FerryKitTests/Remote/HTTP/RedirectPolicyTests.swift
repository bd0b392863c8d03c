import Foundation
import Testing
@testable import FerryKit

/// ``RedirectPolicy`` as a table: what follows a redirect, with what method, body and
/// credentials, and which redirects are refused.
@Suite("RedirectPolicy")
struct RedirectPolicyTests {
    let policy = RedirectPolicy(maxRedirects: 5, allowedProtocols: ["http", "https"])

    /// A REPORT with a body, an Authorization header, a configured secret header, a plain one
    /// and a condition.
    func report(_ url: String = "http://dav.example/old/book/") -> HTTPRequest {
        var headers = HTTPHeaders()
        headers.set("Authorization", "Basic c2VjcmV0")
        headers.setCredential("X-Api-Key", "key-1")
        headers.set("Accept", "application/xml")
        headers.set("Content-Type", "application/xml; charset=utf-8")
        headers.set("Depth", "0")
        headers.set("If-Match", "\"e1\"")
        return HTTPRequest(method: "REPORT", url: url, headers: headers, body: Data("<sync-collection/>".utf8))
    }

    func decide(_ status: Int, to location: String?, after request: HTTPRequest? = nil,
                chain: RedirectPolicy.Chain? = nil) -> RedirectPolicy.Decision {
        let request = request ?? report()
        return policy.decide(status: status, location: location, after: request, chain: chain ?? .init(firstURL: request.url))
    }

    func followed(_ decision: RedirectPolicy.Decision) throws -> (HTTPRequest, RedirectPolicy.Chain) {
        guard case .follow(let request, let chain) = decision else {
            Issue.record("not followed: \(decision)")
            throw CancellationError()
        }
        return (request, chain)
    }

    @Test(arguments: [301, 302, 307, 308])
    func aRedirectKeepsTheMethodAndTheBody(_ status: Int) throws {
        let (next, chain) = try followed(decide(status, to: "/dav/book/"))
        #expect(next.method == "REPORT")
        #expect(next.url == "http://dav.example/dav/book/")
        #expect(next.body == report().body)
        #expect(next.headers == report().headers, "same origin: every header, credentials too")
        #expect(chain.redirects == 1 && !chain.credentialsWithheld)
        #expect(chain.allPermanent == (status == 301 || status == 308))
    }

    @Test func a303AsksForTheTargetWithGETAndNoBody() throws {
        let (next, _) = try followed(decide(303, to: "http://dav.example/result"))
        #expect(next.method == "GET" && next.body == nil)
        for name in ["Content-Type", "Depth", "If-Match"] { #expect(next.headers[name] == nil, "\(name)") }
        #expect(next.headers["Accept"] == "application/xml" && next.headers["Authorization"] != nil)
        let head = try followed(decide(303, to: "/x", after: HTTPRequest(method: "HEAD", url: "http://dav.example/y"))).0
        #expect(head.method == "HEAD")
    }

    @Test func credentialsGoOnlyWhereTheFirstOriginTrusts() throws {
        let table: [(String, String, Bool)] = [
            ("http://dav.example/a", "/b", true),
            ("http://dav.example/a", "http://DAV.example:80/b", true),
            ("http://dav.example/a", "https://dav.example/b", true),            // upgraded, default ports
            ("http://dav.example:8080/a", "https://dav.example:8443/b", false), // upgraded, other port
            ("http://dav.example/a", "http://cdn.example/b", false),
            ("https://dav.example/a", "https://dav.example:444/b", false),
            ("http://127.0.0.1:5232/a", "http://localhost:5232/b", false),
        ]
        for (first, location, keeps) in table {
            let (next, chain) = try followed(decide(307, to: location, after: report(first)))
            #expect(chain.credentialsWithheld == !keeps, "\(first) → \(location)")
            #expect((next.headers["Authorization"] != nil) == keeps, "\(first) → \(location)")
            #expect((next.headers["X-Api-Key"] != nil) == keeps, "\(first) → \(location)")
            #expect(next.headers["Accept"] == "application/xml" && next.body != nil, "plain headers and the body go on")
        }
    }

    @Test func credentialsOnceWithheldStayWithheld() throws {
        let first = report()
        let (away, chain) = try followed(decide(302, to: "http://cdn.example/x", after: first))
        // Back on the first origin: what was dropped is not added back.
        let (back, after) = try followed(decide(302, to: "http://dav.example/old/book/", after: away, chain: chain))
        #expect(after.credentialsWithheld && after.redirects == 2)
        #expect(back.headers["Authorization"] == nil && back.headers["X-Api-Key"] == nil)
    }

    @Test func refusals() {
        #expect(decide(301, to: "file:///etc/passwd") == .refuse(.protocolNotAllowed, detail: "the server redirected (301) to a file: URL, which is not allowed"))
        guard case .refuse(.insecureRedirect, _) = decide(302, to: "http://dav.example/b", after: report("https://dav.example/a")) else {
            Issue.record("https to http followed")
            return
        }
        var chain = RedirectPolicy.Chain(firstURL: report().url)
        chain.redirects = 5
        #expect(decide(307, to: "/again", chain: chain) == .refuse(.tooManyRedirects, detail: "more than 5 redirects"))
    }

    @Test func whatIsNotARedirectIsTheAnswer() {
        for status in [200, 207, 300, 304, 305, 400, 404, 500] {
            #expect(decide(status, to: "/elsewhere") == .deliver, "\(status)")
        }
        #expect(decide(302, to: nil) == .deliver, "no Location: the 302 is the answer")
        #expect(decide(302, to: "  ") == .deliver)
        let never = RedirectPolicy(maxRedirects: 0, allowedProtocols: ["http"])
        #expect(never.decide(status: 301, location: "/b", after: report(), chain: .init(firstURL: report().url)) == .deliver)
    }
}
