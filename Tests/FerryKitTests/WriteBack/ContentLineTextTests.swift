import Foundation
import Testing
@testable import FerryKit

/// The line-level vCard/iCalendar handling write-back relies on: finding and replacing a UID,
/// line ends on the wire and in the row.
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
        #expect(LocalBodyFormat.jsonObject.asNewRecord(#"{"objectId":"a","updatedAt":"u","text":"t"}"#, droppingFields: ParseOptions(applicationID: "app", className: "Quote", key: .restAPI(Secret("k", source: "test"))).remoteAssignedFields)
                == #"{"text":"t"}"#)
        var json = JSONCollectionOptions()
        json.idField = "key"
        json.versionField = "meta.rev"
        #expect(json.remoteAssignedFields == ["key"], "a field inside another is the record's, not one the remote assigns at the top")
        #expect(LocalBodyFormat.jsonObject.asNewRecord(#"{"key":7,"objectId":"kept","text":"t"}"#, droppingFields: json.remoteAssignedFields)
                == #"{"objectId":"kept","text":"t"}"#)
    }
}

@Suite("vCard text on the wire")
struct WireTextTests {
    @Test func everyLineEndsInCRLF_whateverItEndedInBefore() {
        #expect(DAVBodyForm.wire("BEGIN:VCARD\nUID:a\r\nEND:VCARD\n") == Data("BEGIN:VCARD\r\nUID:a\r\nEND:VCARD\r\n".utf8))
        #expect(WebDAVWriter.sameText(DAVBodyForm.wire("A:1\nB:2\n"), "B:2\r\nA:1"))
        // And back as a pull stores it.
        #expect(DAVBodyForm.replica(Data("A:1\r\nB:2\r\n".utf8)) == Data("A:1\nB:2\n".utf8))
    }
}
