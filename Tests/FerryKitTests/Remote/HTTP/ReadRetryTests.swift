import Foundation
import Testing
@testable import FerryKit

/// ``ReadRetry``'s table: what a failed read is asked again after, and when never.
@Suite("Reads asked again within the pass")
struct ReadRetryTests {
    static func headers(_ pairs: [(String, String)]) -> HTTPHeaders {
        var headers = HTTPHeaders()
        for (name, value) in pairs { headers.add(name, value) }
        return headers
    }

    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var failure: ReadRetry.Failure
        var retries = 0
        /// Seconds to wait, or nil: never asked again.
        var after: Double?
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "503, first retry", failure: .status(503, headers: HTTPHeaders(), body: Data()), after: 1),
        Row(name: "502, second retry", failure: .status(502, headers: HTTPHeaders(), body: Data()), retries: 1, after: 2),
        Row(name: "504, third retry", failure: .status(504, headers: HTTPHeaders(), body: Data()), retries: 2, after: 4),
        Row(name: "500 after three retries", failure: .status(500, headers: HTTPHeaders(), body: Data()), retries: 3, after: nil),
        Row(name: "408", failure: .status(408, headers: HTTPHeaders(), body: Data()), after: 1),
        Row(name: "503 naming 5 s", failure: .status(503, headers: headers([("Retry-After", "5")]), body: Data()), after: 5),
        Row(name: "429 naming no wait (Stripe, HubSpot)", failure: .status(429, headers: HTTPHeaders(), body: Data()), after: 1),
        Row(name: "429 naming 2 s", failure: .status(429, headers: headers([("Retry-After", "2")]), body: Data()), after: 2),
        Row(name: "429 naming an hour", failure: .status(429, headers: headers([("Retry-After", "3600")]), body: Data()), after: nil),
        Row(name: "503 naming 30 s", failure: .status(503, headers: headers([("Retry-After", "30")]), body: Data()), after: nil),
        Row(name: "Google's 403 rateLimitExceeded", failure: .status(403, headers: HTTPHeaders(),
                                                                      body: Data(#"{"error":{"errors":[{"reason":"rateLimitExceeded"}]}}"#.utf8)), after: 1),
        Row(name: "a 403 refusing access", failure: .status(403, headers: HTTPHeaders(), body: Data(#"{"message":"forbidden"}"#.utf8)), after: nil),
        Row(name: "401", failure: .status(401, headers: HTTPHeaders(), body: Data()), after: nil),
        Row(name: "404", failure: .status(404, headers: HTTPHeaders(), body: Data()), after: nil),
        Row(name: "a reset connection", failure: .transfer(.connection), after: 1),
        Row(name: "an answer cut off", failure: .transfer(.truncated), after: 1),
        Row(name: "a stalled transfer", failure: .transfer(.stalled), retries: 1, after: 2),
        Row(name: "a connect timeout", failure: .transfer(.connectTimeout), after: 1),
        Row(name: "a TLS failure", failure: .transfer(.tls), after: nil),
        Row(name: "a name that does not resolve", failure: .transfer(.nameResolution), after: nil),
        Row(name: "an answer over max-response-size", failure: .transfer(.responseTooLarge), after: nil),
    ]

    @Test(arguments: rows)
    func decides(_ row: Row) {
        let decision = ReadRetry().decide(after: row.failure, retries: row.retries)
        switch (decision, row.after) {
        case (.giveUp, nil): break
        case (.retry(let wait, _), let seconds?): #expect(wait == .milliseconds(Int64(seconds * 1000)), "\(row.name)")
        default: Issue.record("\(row.name): \(decision), expected \(row.after.map { "a retry after \($0) s" } ?? "none")")
        }
    }

    @Test func onlyReadsAreAskedAgain() {
        #expect(HTTPRequest(url: "https://x").isReadOnly)
        var search = HTTPRequest(method: "POST", url: "https://x")
        #expect(!search.isReadOnly)
        search.readsOnly = true
        #expect(search.isReadOnly)
        #expect(!HTTPRequest(method: "PUT", url: "https://x").isReadOnly && !HTTPRequest(method: "DELETE", url: "https://x").isReadOnly)
        #expect(HTTPRequest(method: "REPORT", url: "https://x").isReadOnly)
    }
}
