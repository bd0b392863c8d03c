import Foundation
import Testing
@testable import FerryKit

/// ``ConflictPlan`` row by row, as its table reads.
@Suite("Conflict plan")
struct ConflictPlanTests {
    typealias Row = (local: LocalChange.Operation, base: String?, held: Bool, remote: ConflictPlan.Remote, expected: ConflictPlan.Outcome)

    static let rows: [Row] = [
        (.update, "2", false, .upsert(version: "2"), .keepLocal),
        (.update, "2", false, .upsert(version: "1"), .keepLocal),
        (.delete, "2", false, .upsert(version: "2"), .keepLocal),
        (.delete, "2", false, .delete, .bothDeleted),
        (.create, nil, false, .delete, .keepLocal),
        (.update, "2", false, .delete, .conflict(.hold)),
        (.update, "2", false, .upsert(version: "3"), .conflict(.hold)),
        (.delete, "2", false, .upsert(version: "3"), .conflict(.hold)),
        (.create, nil, false, .upsert(version: "1"), .conflict(.hold)),
        (.update, "2", true, .upsert(version: "3"), .refreshHeld),
        (.update, "2", true, .delete, .refreshHeld),
    ]

    @Test func theTable() {
        for row in Self.rows {
            let outcome = ConflictPlan.outcome(local: row.local, base: row.base, held: row.held, remote: row.remote, comparison: .ordered, policy: .hold)
            #expect(outcome == row.expected, "\(row.local) base \(row.base ?? "-") held \(row.held) meets \(row.remote)")
        }
    }

    @Test func opaqueVersionsConflictWheneverTheyDiffer() {
        #expect(ConflictPlan.outcome(local: .update, base: "\"b\"", held: false, remote: .upsert(version: "\"a\""), comparison: .opaque, policy: .hold) == .conflict(.hold))
        #expect(ConflictPlan.outcome(local: .update, base: "\"b\"", held: false, remote: .upsert(version: "\"b\""), comparison: .opaque, policy: .hold) == .keepLocal)
    }

    @Test func policiesResolve() {
        #expect(ConflictPlan.resolution(.hold, localDeleted: false) == .hold)
        #expect(ConflictPlan.resolution(.remoteWins, localDeleted: false) == .takeRemote)
        #expect(ConflictPlan.resolution(.localWins, localDeleted: true) == .rebaseLocal)
        #expect(ConflictPlan.resolution(.keepBoth, localDeleted: false) == .keepBoth)
        // Nothing local to keep beside the remote record.
        #expect(ConflictPlan.resolution(.keepBoth, localDeleted: true) == .takeRemote)
    }
}

@Suite("Content line edits")
struct ContentLineTextTests {
    @Test func theUIDIsFoundWhateverTheLineEndingsFoldsAndCase() {
        #expect(ContentLineText.uid(in: "BEGIN:VCARD\r\nVERSION:3.0\r\nUID:abc-1\r\nEND:VCARD\r\n") == "abc-1")
        #expect(ContentLineText.uid(in: "BEGIN:VCARD\nuid;VALUE=text:x\n y\nEND:VCARD\n") == "xy")
        #expect(ContentLineText.uid(in: "BEGIN:VCARD\r\nitem1.UID:g\r\nEND:VCARD\r\n") == "g")
        #expect(ContentLineText.uid(in: "BEGIN:VCARD\r\nFN:No\r\nEND:VCARD\r\n") == nil)
    }

    @Test func aNewUIDReplacesEveryUIDLineAndKeepsTheRest() {
        let event = "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:old\r\n -folded\r\nSUMMARY:a\r\nEND:VEVENT\r\nBEGIN:VEVENT\r\nUID:old-folded\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
        #expect(ContentLineText.replacingUID(in: event, with: "new") == "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:new\r\nSUMMARY:a\r\nEND:VEVENT\r\nBEGIN:VEVENT\r\nUID:new\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n")
        #expect(LocalBodyFormat.jsonObject.asNewRecord(#"{"objectId":"a","updatedAt":"u","text":"t"}"#) == #"{"text":"t"}"#)
    }
}

@Suite("vCard text on the wire")
struct WireTextTests {
    @Test func everyLineEndsInCRLF_whateverItEndedInBefore() {
        #expect(WebDAVWriter.wireText("BEGIN:VCARD\nUID:a\r\nEND:VCARD\n") == Data("BEGIN:VCARD\r\nUID:a\r\nEND:VCARD\r\n".utf8))
        #expect(WebDAVWriter.sameText(WebDAVWriter.wireText("A:1\nB:2\n"), "B:2\r\nA:1"))
        // And back as a pull stores it.
        #expect(WebDAVWriter.replicaText(Data("A:1\r\nB:2\r\n".utf8)) == Data("A:1\nB:2\n".utf8))
    }
}
