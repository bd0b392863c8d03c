import Foundation
import Testing
@testable import FerryKit

/// Every API's own way of saying "too many requests", as its documentation shows it, is a rate
/// limit to wait out (with the wait it names), never a refusal to fix by configuration; a 403
/// that refuses access in the same APIs stays a refusal.
@Suite struct RateLimitAnswerTests {
    struct Answer: Sendable, CustomStringConvertible {
        var api: String
        var status: Int
        var headers: [(String, String)] = []
        var body = ""
        var wait: Duration?
        var description: String { "\(api): HTTP \(status)" }
    }

    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static let limits: [Answer] = [
        Answer(api: "GitHub primary", status: 403, headers: [("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", "1800000030")],
               body: #"{"message":"API rate limit exceeded for user ID 1.","documentation_url":"https://docs.github.com/rest"}"#, wait: .seconds(30)),
        Answer(api: "GitHub secondary", status: 403, headers: [("Retry-After", "60")],
               body: #"{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}"#, wait: .seconds(60)),
        Answer(api: "GitLab", status: 429, headers: [("RateLimit-Remaining", "0"), ("RateLimit-Reset", "1800000020")],
               body: "Retry later", wait: .seconds(20)),
        Answer(api: "Shopify", status: 429, headers: [("Retry-After", "2.0")],
               body: #"{"errors":"Exceeded 2 calls per second for api client. Reduce request rates to resume uninterrupted service."}"#, wait: .seconds(2)),
        Answer(api: "Stripe", status: 429,
               body: #"{"error":{"code":"rate_limit","message":"Too many requests hit the API too quickly.","type":"invalid_request_error"}}"#),
        Answer(api: "WordPress (a host's limiter)", status: 429, headers: [("Retry-After", "5")], body: "Too Many Requests", wait: .seconds(5)),
        Answer(api: "Jira", status: 429, headers: [("Retry-After", "3"), ("X-RateLimit-Reset", "2027-01-15T08:00Z")],
               body: #"{"errorMessages":["Rate limit exceeded."]}"#, wait: .seconds(3)),
        Answer(api: "Zendesk", status: 429, headers: [("Retry-After", "93")], body: #"{"error":"APIRateLimitExceeded"}"#, wait: .seconds(93)),
        Answer(api: "HubSpot", status: 429,
               body: #"{"status":"error","message":"You have reached your secondly limit.","errorType":"RATE_LIMIT","policyName":"SECONDLY"}"#),
        Answer(api: "Airtable", status: 429, body: #"{"errors":[{"error":"RATE_LIMIT_REACHED","message":"Rate limit exceeded. Please try again later"}]}"#),
        Answer(api: "Notion", status: 429, headers: [("Retry-After", "1")],
               body: #"{"object":"error","status":429,"code":"rate_limited","message":"You have been rate limited. Please try again in a few minutes."}"#,
               wait: .seconds(1)),
        Answer(api: "Salesforce", status: 403, body: #"[{"message":"TotalRequests Limit exceeded.","errorCode":"REQUEST_LIMIT_EXCEEDED"}]"#),
        Answer(api: "Microsoft Graph", status: 429, headers: [("Retry-After", "10")],
               body: #"{"error":{"code":"TooManyRequests","message":"Please retry after 10 seconds."}}"#, wait: .seconds(10)),
        Answer(api: "Google (403)", status: 403,
               body: #"{"error":{"errors":[{"domain":"usageLimits","reason":"rateLimitExceeded","message":"Rate Limit Exceeded"}],"code":403,"message":"Rate Limit Exceeded"}}"#),
        Answer(api: "Google (daily)", status: 403,
               body: #"{"error":{"errors":[{"domain":"usageLimits","reason":"dailyLimitExceeded","message":"Daily Limit Exceeded"}],"code":403}}"#),
        Answer(api: "Google (429)", status: 429,
               body: #"{"error":{"errors":[{"domain":"usageLimits","reason":"rateLimitExceeded"}],"code":429,"message":"Rate Limit Exceeded"}}"#),
    ]

    static let refusals: [Answer] = [
        Answer(api: "GitHub", status: 403, headers: [("X-RateLimit-Remaining", "4999")],
               body: #"{"message":"Resource not accessible by integration"}"#),
        Answer(api: "Google", status: 403,
               body: #"{"error":{"errors":[{"domain":"global","reason":"insufficientPermissions","message":"Insufficient Permission"}],"code":403}}"#),
        Answer(api: "Google Drive (storage quota)", status: 403,
               body: #"{"error":{"errors":[{"domain":"usageLimits","reason":"storageQuotaExceeded","message":"The user's Drive storage quota has been exceeded."}],"code":403}}"#),
        Answer(api: "Salesforce", status: 403, body: #"[{"message":"The REST API is not enabled for this Organization.","errorCode":"API_DISABLED_FOR_ORG"}]"#),
        Answer(api: "Stripe", status: 403, body: #"{"error":{"message":"The provided key does not have the required permissions.","type":"invalid_request_error"}}"#),
    ]

    static func classify(_ answer: Answer) -> SyncError {
        HTTPStatusClassifier.error(status: answer.status, headers: HTTPHeaders(answer.headers), body: Data(answer.body.utf8),
                                   url: "https://api.example.com/items", target: .configuredURL,
                                   context: .init(store: "items", credentialsConfigured: true), now: now)
    }

    @Test(arguments: limits)
    func aRateLimitIsWaitedOut(_ answer: Answer) {
        let error = Self.classify(answer)
        #expect(error.kind == .rateLimited, "\(answer.api): \(error.message)")
        #expect(error.retryAfter == answer.wait, "\(answer.api)")
        #expect(error.isRetryable)
    }

    @Test(arguments: refusals)
    func aRefusalStaysARefusal(_ answer: Answer) {
        let error = Self.classify(answer)
        #expect(error.kind == .unauthorized, "\(answer.api): \(error.message)")
    }

    /// The IETF draft's `RateLimit-Reset` counts seconds from now, GitHub's and GitLab's are
    /// epoch seconds: told apart by size.
    @Test func aResetInSecondsFromNowIsNotTakenForAnEpoch() {
        let headers = HTTPHeaders([("RateLimit-Remaining", "0"), ("RateLimit-Reset", "45")])
        #expect(HTTPStatusClassifier.retryAfter(headers, now: Self.now) == .seconds(45))
    }
}
