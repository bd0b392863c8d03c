import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// Injected faults on the second page of a Parse pass: the right error kind, the first page
/// handed over, nothing of the failed page; the next pass from the committed cursor converges.
/// (Reads are not asked again here, `read-retries = 0`, so each fault reaches the pass; a fault
/// that passes is asked again: ``aFaultThatPassesIsAskedAgainWithinThePass()``.)
@Suite(.serialized) struct ParseSourceFaultTests {
    struct Case: Sendable, CustomStringConvertible {
        var fault: [String: any Sendable]
        var expected: @Sendable (SyncError) -> Bool
        var description: String { "\(fault)" }
    }

    static let cases: [Case] = [
        // A 503 is the same failure with or without Retry-After; the wait it names is kept.
        Case(fault: ["status": 503, "retry_after": 2]) { $0.kind == .httpStatus(503) && $0.isRetryable && $0.retryAfter == .seconds(2) },
        Case(fault: ["status": 429, "retry_after": 1]) { $0.kind == .rateLimited && $0.retryAfter != nil },
        Case(fault: ["status": 500]) { $0.kind == .httpStatus(500) && $0.isRetryable },
        Case(fault: ["status": 400, "body": #"{"code":102,"error":"Invalid parameter"}"#]) { $0.kind == .remote(code: "parse-102") && $0.message.contains("Invalid parameter") },
        Case(fault: ["kind": "truncate"]) { $0.kind == .transport(.truncated) },
        Case(fault: ["kind": "invalid-json"]) { $0.kind == .malformedResponse && $0.position.hasPrefix("byte ") && $0.url.contains("/classes/Quote") },
        Case(fault: ["kind": "html200"]) { $0.kind == .malformedResponse && $0.message.contains("HTML") && $0.store == "quotes" },
        Case(fault: ["kind": "reset", "next": 3]) { $0.kind == .transport(.connection) },
        Case(fault: ["kind": "stall", "seconds": 4]) { $0.kind == .transport(.stalled) },
        Case(fault: ["kind": "stall-body", "seconds": 8]) { $0.kind == .transport(.stalled) },
    ]

    @Test(arguments: cases)
    func faultOnSecondPage(_ testCase: Case) throws {
        let server = try ParseTestServer.start()
        try server.admin("seed", ["class": "Quote", "count": 300, "seed": 9])
        var store = server.store(pageSize: 100)
        store.session.readRetries = 0
        store.session.lowSpeedLimit = 100
        store.session.lowSpeedTime = 1
        var fault = testCase.fault
        // curl retries a request whose reused connection was reset once: resets need more.
        fault["next"] = fault["next"] ?? 1
        fault["after"] = 1
        try server.admin("fault", fault)
        let failed = try server.sync(store)
        let error = try #require(failed.error)
        #expect(testCase.expected(error), "\(error) kind \(error.kind)")
        #expect(failed.batches.count == 1, "only the first page was handed over")
        #expect(failed.records.count == 100)
        #expect(failed.outcome == nil && failed.callsAfterEnd == 0 && failed.offLoopCalls == 0)
        // The next pass starts from the committed cursor and gets the rest.
        try server.admin("fault", ["clear": true])
        let next = try server.sync(store, cursor: failed.finalCursor)
        #expect(next.error == nil)
        #expect(Set(failed.records.map(\.id) + next.records.map(\.id)).count == 300)
        #expect(next.records.count == 200)
    }

    /// A 503 or a reset on the second page, once, is asked again within the pass (after 1 s),
    /// which then reads every record.
    @Test(arguments: [["status": 503], ["kind": "reset", "next": 2]] as [[String: any Sendable]])
    func aFaultThatPassesIsAskedAgainWithinThePass(_ fault: [String: any Sendable]) throws {
        let server = try ParseTestServer.start()
        try server.admin("seed", ["class": "Quote", "count": 300, "seed": 9])
        let store = server.store(pageSize: 100)
        var once = fault
        once["next"] = once["next"] ?? 1
        once["after"] = 1
        try server.admin("fault", once)
        let pass = try server.sync(store)
        #expect(pass.error == nil, "\(String(describing: pass.error))")
        #expect(Set(pass.records.map(\.id)).count == 300)
    }
}
