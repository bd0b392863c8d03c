import Testing
@testable import FerryKit

/// ``WriteAnswer`` as its table reads: every kind's write answers classified in one place.
@Suite("A write's answer, for every kind")
struct WriteAnswerTests {
    static let http: [(status: Int, answer: WriteAnswer)] = [
        (200, .accepted), (201, .accepted), (204, .accepted),
        (412, .changedSince),
        (404, .gone), (410, .gone),
        (400, .refused("HTTP 400: bad card")), (403, .refused("HTTP 403: bad card")), (409, .refused("HTTP 409: bad card")),
        (413, .refused("HTTP 413: bad card")), (415, .refused("HTTP 415: bad card")), (422, .refused("HTTP 422: bad card")),
        (401, .failed), (500, .failed), (503, .failed), (302, .failed), (429, .failed),
    ]

    @Test func httpAnswers() {
        for row in Self.http {
            #expect(WriteAnswer.http(status: row.status, reason: "bad card") == row.answer, "HTTP \(row.status)")
        }
        #expect(WriteAnswer.http(status: 422, reason: nil) == .refused("HTTP 422"), "a refusal without words names its status")
    }

    @Test func parseErrorCodes() {
        #expect(WriteAnswer.parse(code: 101, message: "Object not found.") == .gone)
        #expect(WriteAnswer.parse(code: 142, message: "text is required") == .refused("Parse error 142: text is required"))
        #expect(WriteAnswer.parse(code: 111, message: "invalid type") == .refused("Parse error 111: invalid type"))
    }

    @Test func aWriteToARecordThatIsGone() {
        #expect(WriteAnswer.goneResult(for: .delete) == .accepted(nil), "a delete of a record already gone is done")
        #expect(WriteAnswer.goneResult(for: .update) == .conflict(remote: nil), "an update meets the delete")
        #expect(WriteAnswer.goneResult(for: .create) == .conflict(remote: nil))
    }
}
