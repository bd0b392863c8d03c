import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// The one mapping of HTTP answers to errors, read as a table: every kind uses it.
@Suite struct HTTPStatusClassifierTests {
    struct Row: Sendable, CustomStringConvertible {
        var status: Int
        var headers: [(String, String)] = []
        var target: HTTPStatusClassifier.Target = .derivedURL
        var credentials = true
        var kind: SyncError.Kind
        var retryAfter: Duration?
        var says: String
        var description: String { "HTTP \(status) \(headers.map { "\($0.0): \($0.1)" }) -> \(kind)" }
    }

    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static let table: [Row] = [
        Row(status: 429, kind: .rateLimited, says: "rate limited (HTTP 429)"),
        Row(status: 429, headers: [("Retry-After", "7")], kind: .rateLimited, retryAfter: .seconds(7), says: "rate limited"),
        Row(status: 429, headers: [("Retry-After", "Thu, 15 Jan 2027 08:00:10 GMT")], kind: .rateLimited, retryAfter: .seconds(10), says: "rate limited"),
        Row(status: 403, headers: [("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", "1800000060")], kind: .rateLimited,
            retryAfter: .seconds(60), says: "rate limit exhausted"),
        // A 503 is the same failure with or without Retry-After; the wait is kept when given.
        Row(status: 503, kind: .httpStatus(503), says: "HTTP 503"),
        Row(status: 503, headers: [("Retry-After", "3")], kind: .httpStatus(503), retryAfter: .seconds(3), says: "HTTP 503"),
        Row(status: 401, kind: .unauthorized, says: "refused the credentials"),
        Row(status: 401, credentials: false, kind: .unauthorized, says: "configures none"),
        Row(status: 403, kind: .unauthorized, says: "refused access (HTTP 403)"),
        Row(status: 404, target: .configuredURL, kind: .configuration, says: "check url ="),
        Row(status: 410, target: .configuredURL, kind: .configuration, says: "nothing at the configured url (HTTP 410)"),
        Row(status: 404, kind: .httpStatus(404), says: "HTTP 404"),
        Row(status: 500, kind: .httpStatus(500), says: "HTTP 500"),
        Row(status: 408, kind: .httpStatus(408), says: "HTTP 408"),
        Row(status: 400, kind: .httpStatus(400), says: "HTTP 400"),
    ]

    @Test(arguments: table)
    func classification(_ row: Row) {
        let error = HTTPStatusClassifier.error(
            status: row.status, headers: HTTPHeaders(row.headers), body: Data(), url: "https://api.example.com/items",
            target: row.target, context: .init(store: "items", credentialsConfigured: row.credentials), now: Self.now)
        #expect(error.kind == row.kind)
        #expect(error.retryAfter == row.retryAfter)
        #expect(error.message.contains(row.says), "\(error.message)")
        #expect(error.store == "items")
    }

    @Test func retryableFollowsTheKind() {
        let context = HTTPStatusClassifier.Context(store: "s", credentialsConfigured: true)
        func error(_ status: Int) -> SyncError {
            HTTPStatusClassifier.error(status: status, headers: HTTPHeaders(), body: Data(), url: "u", target: .configuredURL, context: context)
        }
        #expect(error(503).isRetryable)
        #expect(error(429).isRetryable)
        #expect(!error(401).isRetryable)
        #expect(!error(404).isRetryable)
        #expect(!error(400).isRetryable)
    }

    @Test func bodiesAreQuotedByWhatTheySay_andNeverEchoASecret() {
        let context = HTTPStatusClassifier.Context(store: "s", credentialsConfigured: true, secrets: ["tok-123"])
        let html = Data("<!DOCTYPE html><html><head><title>502 Bad Gateway</title><style>body{}</style></head><body><h1>Bad Gateway</h1></body></html>".utf8)
        let error = HTTPStatusClassifier.error(status: 502, headers: HTTPHeaders([("Content-Type", "text/html")]), body: html,
                                               url: "u", target: .derivedURL, context: context)
        #expect(error.message == "HTTP 502: 502 Bad Gateway")
        let echo = Data(#"{"error":"bad token tok-123 for this client"}"#.utf8)
        let refused = HTTPStatusClassifier.error(status: 401, headers: HTTPHeaders([("Content-Type", "application/json")]), body: echo,
                                                 url: "u", target: .derivedURL, context: context)
        #expect(refused.message == "the remote refused the credentials (HTTP 401): bad token <redacted> for this client")
    }

    /// A refusal names where the credentials came from (a 401 named neither the user nor the
    /// credential reference), never what they hold.
    @Test func aRefusalNamesTheCredentialReference() {
        let context = HTTPStatusClassifier.Context(store: "s", credentialsConfigured: true, secrets: ["tok-123"],
                                                   credentialSources: ["credential dav-pass"])
        let refused = HTTPStatusClassifier.error(status: 401, headers: HTTPHeaders(), body: Data(), url: "u", target: .derivedURL, context: context)
        #expect(refused.kind == .unauthorized)
        #expect(refused.message.contains("credential dav-pass") && refused.message.contains("username ="))
        #expect(!refused.description.contains("tok-123"))
    }
}

@Suite struct ErrorBodySnippetTests {
    @Test func htmlPagesGiveTheirTitleOrText() {
        #expect(ErrorBodySnippet.summary(of: Data("<html><head><title>Login</title></head><body><h1>Sign in to continue</h1></body></html>".utf8),
                                         contentType: "text/html; charset=utf-8") == "Login: Sign in to continue")
        #expect(ErrorBodySnippet.summary(of: Data("<html><body><script>var x = 1;</script><p>Service   down\n for maintenance</p></body></html>".utf8),
                                         contentType: nil) == "Service down for maintenance")
    }

    @Test func jsonErrorsGiveTheirMessage() {
        #expect(ErrorBodySnippet.summary(of: Data(#"{"message":"Not Found","documentation_url":"https://docs"}"#.utf8), contentType: "application/json") == "Not Found")
        #expect(ErrorBodySnippet.summary(of: Data(#"{"error":{"message":"quota"}}"#.utf8), contentType: "application/json") == "quota")
        #expect(ErrorBodySnippet.summary(of: Data(#"[1,2]"#.utf8), contentType: "application/json") == "[1,2]")
    }

    @Test func xmlErrorsGiveTheirTextOrElementNames() {
        #expect(ErrorBodySnippet.summary(of: Data(#"<?xml version="1.0"?><D:error xmlns:D="DAV:"><D:valid-sync-token/></D:error>"#.utf8),
                                         contentType: "application/xml") == "error: valid-sync-token")
        #expect(ErrorBodySnippet.summary(of: Data("<error><message>Could not parse the XML body</message></error>".utf8),
                                         contentType: "text/xml") == "Could not parse the XML body")
    }

    @Test func summariesAreBoundedAndPrintable() throws {
        let long = String(repeating: "x", count: 5000)
        let summary = try #require(ErrorBodySnippet.summary(of: Data(long.utf8), contentType: "text/plain"))
        #expect(summary.count == ErrorBodySnippet.limit)
        #expect(ErrorBodySnippet.summary(of: Data([0x41, 0x00, 0x1B, 0x5B, 0x42, 0xFF]), contentType: nil) == "A [B")
        #expect(ErrorBodySnippet.summary(of: Data(), contentType: "text/plain") == nil)
        #expect(ErrorBodySnippet.summary(of: Data(" \n\t".utf8), contentType: "text/plain") == nil)
    }
}
