import Testing
@testable import FerryKit

/// ``ContentLineComparison`` as a table: what servers do to a stored object (the same record),
/// and what another client's edit does (another record).
@Suite("Telling an object a server stored from the one sent")
struct ContentLineComparisonTests {
    static let card = "BEGIN:VCARD\r\nVERSION:3.0\r\nUID:a\r\nFN:Jane Doe\r\nN:Doe;Jane;;;\r\nitem1.EMAIL:j@example.com\r\nNOTE:semi\\;\r\nEND:VCARD\r\n"
    static let event = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Ferry//EN\r\nBEGIN:VEVENT\r\nUID:e\r\nDTSTART:20260105T100000Z\r\nSUMMARY:Talk\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"

    /// (what the server holds, the same record as sent?)
    static let cardRows: [(stored: String, same: Bool, why: String)] = [
        ("BEGIN:VCARD\nN:Doe;Jane\nVERSION:3.0\nFN:Jane Doe\nUID:a\nITEM1.EMAIL:j@example.com\nNOTE:semi\\;\nEND:VCARD", true,
         "reordered, LF, no final line end, trailing components cut, group upper-cased (SOGo)"),
        ("BEGIN:VCARD\r\nVERSION:3.0\r\nUID:a\r\nFN:Jane\r\n Doe\r\nN:Doe;Jane;;;\r\nitem1.EMAIL:j@example.com\r\nNOTE:semi\\;\r\nEND:VCARD\r\n", false,
         "a fold that joins two words into one is another value"),
        ("BEGIN:VCARD\r\nVERSION:3.0\r\nUID:a\r\nFN:Jane Doe\r\nN:Doe;Jane;;;\r\nitem1.EMAIL:j@example.com\r\nNOTE:semi\\;\r\nREV:20260101T000000Z\r\nEND:VCARD\r\n", true,
         "a REV stamped (DAViCal)"),
        ("BEGIN:VCARD\r\nVERSION:3.0\r\nUID:a\r\nFN:Jane Roe\r\nN:Doe;Jane;;;\r\nitem1.EMAIL:j@example.com\r\nNOTE:semi\\;\r\nEND:VCARD\r\n", false,
         "another client's edit"),
        ("BEGIN:VCARD\r\nVERSION:3.0\r\nUID:a\r\nFN:Jane Doe\r\nN:Doe;Jane;;;\r\nitem1.EMAIL:j@example.com\r\nNOTE:semi\\\r\nEND:VCARD\r\n", false,
         "an escaped semicolon is text, not an empty component"),
        ("BEGIN:VCARD\r\nVERSION:3.0\r\nUID:a\r\nFN:Jane Doe\r\nN:Doe;Jane;;;\r\nEND:VCARD\r\n", false,
         "a property gone"),
    ]

    @Test func cardsAsServersStoreThem() {
        for row in Self.cardRows {
            #expect(ContentLineComparison.same(row.stored, Self.card) == row.same, "\(row.why)")
        }
    }

    @Test func eventsAsServersStoreThem() {
        let sogo = "BEGIN:VCALENDAR\nPRODID:-//Inverse inc./SOGo 5.8//EN\nVERSION:2.0\nBEGIN:VEVENT\nUID:e\nDTSTART:20260105T100000Z\nSUMMARY:Talk\nCLASS:PUBLIC\nEND:VEVENT\nEND:VCALENDAR"
        #expect(ContentLineComparison.same(sogo, Self.event), "PRODID replaced, CLASS:PUBLIC made explicit")
        let moved = Self.event.replacingOccurrences(of: "DTSTART:20260105T100000Z", with: "DTSTART:20260106T100000Z")
        #expect(!ContentLineComparison.same(moved, Self.event))
        let confidential = Self.event.replacingOccurrences(of: "SUMMARY:Talk", with: "SUMMARY:Talk\r\nCLASS:CONFIDENTIAL")
        #expect(!ContentLineComparison.same(confidential, Self.event), "a class other than the default is content")
    }

    @Test func aColonInAQuotedParameterIsNotTheSeparator() {
        #expect(ContentLineComparison.normalized(#"dtstart;tzid="a:b":20260105T100000"#) == #"DTSTART;TZID="A:B":20260105T100000"#)
        #expect(ContentLineComparison.normalized("n:Doe;;;") == "N:Doe")
    }
}
