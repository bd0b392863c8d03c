import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

@Suite("CardFieldExtractor")
struct CardFieldExtractorTests {
    @Test func vCardBasicsWithGroupsParametersAndSeveralEmails() {
        let card = "BEGIN:VCARD\r\nVERSION:3.0\r\nUID:urn:uuid:42\r\nFN:Ann Example\r\nEMAIL;TYPE=work:ann@work.example\r\nitem1.EMAIL;TYPE=\"home,pref\":ann@home.example\r\nTEL;TYPE=cell:+1 555 0100\r\nORG:Acme\\, Inc.;Sales;\r\nEND:VCARD\r\n"
        let fields = CardFieldExtractor.fields(vCard: card)
        #expect(fields == [
            "UID": "urn:uuid:42",
            "FN": "Ann Example",
            "EMAIL": "ann@work.example, ann@home.example",
            "TEL": "+1 555 0100",
            "ORG": "Acme, Inc., Sales",
        ])
    }

    @Test func foldedLinesAreUnfolded() {
        // CRLF + space and LF + tab folds; a fold may split a word (and a UTF-8 sequence's
        // characters, since folding is by octets and we unfold scalars).
        let card = "BEGIN:VCARD\r\nFN:Jo\r\n hn Q\n\t. Public\r\nUID:abc\r\n def\r\nEND:VCARD"
        let fields = CardFieldExtractor.fields(vCard: card)
        #expect(fields["FN"] == "John Q. Public")
        #expect(fields["UID"] == "abcdef")
    }

    @Test func escapesAreUndone() {
        let fields = CardFieldExtractor.fields(vCard: "BEGIN:VCARD\nFN:Semi\\; Colon\\, Back\\\\slash\\nNew\nEND:VCARD\n")
        #expect(fields["FN"] == "Semi; Colon, Back\\slash\nNew")
    }

    @Test func quotedParameterValuesMayHoldColons() throws {
        let line = try #require(ContentLine("item2.X-ABLABEL;X-A=\"a:b;c\";TYPE=x:value:with:colons"))
        #expect(line.group == "ITEM2")
        #expect(line.name == "X-ABLABEL")
        #expect(line.parameters == ["X-A": "a:b;c", "TYPE": "x"])
        #expect(line.value == "value:with:colons")
        #expect(ContentLine("no colon here") == nil)
        #expect(ContentLine(":value") == nil)
    }

    @Test func onlyTheFirstCardCounts() {
        let fields = CardFieldExtractor.fields(vCard: "BEGIN:VCARD\nUID:1\nEND:VCARD\nBEGIN:VCARD\nUID:2\nEMAIL:x@y\nEND:VCARD\n")
        #expect(fields == ["UID": "1"])
    }

    @Test func lowercaseNamesAndEmptyValues() {
        let fields = CardFieldExtractor.fields(vCard: "begin:vcard\nuid:7\nemail:\ntel:123\nend:vcard\n")
        #expect(fields == ["UID": "7", "TEL": "123"])
    }

    @Test func iCalendarFirstEventSkippingTimezoneAndAlarm() {
        let calendar = """
        BEGIN:VCALENDAR\r
        VERSION:2.0\r
        BEGIN:VTIMEZONE\r
        TZID:Europe/Berlin\r
        BEGIN:STANDARD\r
        DTSTART:19701025T030000\r
        END:STANDARD\r
        END:VTIMEZONE\r
        BEGIN:VEVENT\r
        UID:event-1\r
        SUMMARY:Planning\\, Q3\r
        DTSTART;TZID=Europe/Berlin:20240105T100000\r
        DTEND;TZID=Europe/Berlin:20240105T110000\r
        RRULE:FREQ=WEEKLY;BYDAY=FR\r
        BEGIN:VALARM\r
        SUMMARY:alarm text\r
        END:VALARM\r
        END:VEVENT\r
        BEGIN:VEVENT\r
        UID:event-2\r
        END:VEVENT\r
        END:VCALENDAR\r
        """
        let fields = CardFieldExtractor.fields(iCalendar: calendar)
        #expect(fields == [
            "UID": "event-1",
            "SUMMARY": "Planning, Q3",
            "DTSTART": "20240105T100000",
            "DTSTART_TZID": "Europe/Berlin",
            "DTEND": "20240105T110000",
            "DTEND_TZID": "Europe/Berlin",
            "RRULE": "FREQ=WEEKLY;BYDAY=FR",
        ])
    }

    @Test func vtodoCounts() {
        let fields = CardFieldExtractor.fields(iCalendar: "BEGIN:VCALENDAR\nBEGIN:VTODO\nUID:t\nSUMMARY:Do it\nEND:VTODO\nEND:VCALENDAR\n")
        #expect(fields == ["UID": "t", "SUMMARY": "Do it"])
    }

    /// A journal entry is a record too (RFC 5545 §3.6.3): its UID, SUMMARY and DTSTART.
    @Test func vjournalCounts() {
        let fields = CardFieldExtractor.fields(iCalendar: "BEGIN:VCALENDAR\r\nBEGIN:VTIMEZONE\r\nTZID:Europe/Berlin\r\nEND:VTIMEZONE\r\n"
            + "BEGIN:VJOURNAL\r\nUID:j1\r\nDTSTART;VALUE=DATE:20260105\r\nSUMMARY:Minutes\\, Monday\r\nEND:VJOURNAL\r\nEND:VCALENDAR\r\n")
        #expect(fields == ["UID": "j1", "SUMMARY": "Minutes, Monday", "DTSTART": "20260105"])
    }

    @Test func invalidUTF8IsAProblem() {
        #expect(throws: CardFieldExtractor.Problem.invalidUTF8) {
            try CardFieldExtractor.fields(of: Data([0x55, 0x49, 0x44, 0x3A, 0xFF, 0xFE]), kind: .carddav)
        }
        #expect((try? CardFieldExtractor.fields(of: Data("BEGIN:VCARD\nUID:ü\nEND:VCARD".utf8), kind: .carddav)) == ["UID": "ü"])
    }
}
