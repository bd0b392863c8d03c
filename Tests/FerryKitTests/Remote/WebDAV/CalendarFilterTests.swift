import Foundation
import Testing
@testable import FerryKit

/// The local half of a calendar filter (a server that refuses calendar-query), as a spec.
@Suite struct CalendarFilterTests {
    static let now = CalendarFilter.date("20261124T120000Z")!

    static func object(_ component: String, _ lines: [String]) -> String {
        (["BEGIN:VCALENDAR", "VERSION:2.0", "BEGIN:\(component)", "UID:x"] + lines + ["BEGIN:VALARM", "TRIGGER:-PT15M", "END:VALARM",
         "END:\(component)", "END:VCALENDAR"]).joined(separator: "\r\n")
    }

    /// From 30 days ago to 60 days ahead.
    static let month = CalendarFilter(past: .seconds(30 * 86_400), future: .seconds(60 * 86_400))

    @Test func rangesAreSignedDurationsFromNow() throws {
        let (past, future) = try #require(CalendarFilter.parseRange("-90d..+365d"))
        #expect(past == .seconds(90 * 86_400) && future == .seconds(365 * 86_400))
        let (past2, future2) = try #require(CalendarFilter.parseRange("90d .. 1d"))
        #expect(past2 == .seconds(90 * 86_400) && future2 == .seconds(86_400))
        // Only the future, or only the past.
        #expect(CalendarFilter.parseRange("0..30d").map { $0.past == .zero && $0.future == .seconds(30 * 86_400) } == true)
        #expect(CalendarFilter.parseRange("-30d..-7d").map { $0.past == .seconds(30 * 86_400) && $0.future == .zero - .seconds(7 * 86_400) } == true)
        for bad in ["30d", "+30d..-30d", "0..0", "-1y..+1y", "..30d", "a..b"] {
            #expect(CalendarFilter.parseRange(bad) == nil, "\(bad)")
        }
    }

    @Test func eventsOverlapTheRangeOrNot() {
        let filter = Self.month
        #expect(filter.includes(Self.object("VEVENT", ["DTSTART:20261120T100000Z", "DTEND:20261120T110000Z"]), now: Self.now))
        #expect(!filter.includes(Self.object("VEVENT", ["DTSTART:20250101T100000Z", "DTEND:20250101T110000Z"]), now: Self.now))
        #expect(!filter.includes(Self.object("VEVENT", ["DTSTART:20270601T100000Z"]), now: Self.now))
        // Started before the range, still going on inside it.
        #expect(filter.includes(Self.object("VEVENT", ["DTSTART:20261001T000000Z", "DURATION:P40D"]), now: Self.now))
        // An all-day event (a DATE): the whole day.
        #expect(filter.includes(Self.object("VEVENT", ["DTSTART;VALUE=DATE:20261025"]), now: Self.now))
        #expect(!filter.includes(Self.object("VEVENT", ["DTSTART;VALUE=DATE:20261024"]), now: Self.now))
        // A local time with a TZID is read as UTC.
        #expect(filter.includes(Self.object("VEVENT", ["DTSTART;TZID=Europe/Paris:20261201T090000"]), now: Self.now))
    }

    @Test func recurrencesAreKeptUntilTheirLastOccurrenceCanEnd() {
        let filter = Self.month
        #expect(filter.includes(Self.object("VEVENT", ["DTSTART:20200101T100000Z", "RRULE:FREQ=WEEKLY"]), now: Self.now))
        #expect(!filter.includes(Self.object("VEVENT", ["DTSTART:20200101T100000Z", "RRULE:FREQ=WEEKLY;UNTIL=20210101T000000Z"]), now: Self.now))
        #expect(!filter.includes(Self.object("VEVENT", ["DTSTART:20240101T100000Z", "RRULE:FREQ=WEEKLY;COUNT=4"]), now: Self.now))
        #expect(filter.includes(Self.object("VEVENT", ["DTSTART:20240101T100000Z", "RRULE:FREQ=MONTHLY;COUNT=40"]), now: Self.now))
        #expect(filter.includes(Self.object("VEVENT", ["DTSTART:20250101T100000Z", "RRULE:FREQ=DAILY;INTERVAL=30;COUNT=40"]), now: Self.now))
        #expect(!filter.includes(Self.object("VEVENT", ["DTSTART:20250101T100000Z", "RRULE:FREQ=DAILY;INTERVAL=30;COUNT=19"]), now: Self.now))
        // Not started yet.
        #expect(!filter.includes(Self.object("VEVENT", ["DTSTART:20280101T100000Z", "RRULE:FREQ=DAILY"]), now: Self.now))
    }

    @Test func tasksAndJournalsFollowRFC4791() {
        let filter = Self.month
        #expect(filter.includes(Self.object("VTODO", ["SUMMARY:no dates"]), now: Self.now))
        #expect(filter.includes(Self.object("VTODO", ["DUE:20261201T000000Z"]), now: Self.now))
        #expect(!filter.includes(Self.object("VTODO", ["DUE:20250101T000000Z"]), now: Self.now))
        #expect(!filter.includes(Self.object("VJOURNAL", ["SUMMARY:no date"]), now: Self.now))
        #expect(filter.includes(Self.object("VJOURNAL", ["DTSTART;VALUE=DATE:20261124"]), now: Self.now))
    }

    @Test func componentsChooseTheTypeWithOrWithoutARange() {
        let tasks = CalendarFilter(components: ["VTODO"])
        #expect(tasks.includes(Self.object("VTODO", []), now: Self.now))
        #expect(!tasks.includes(Self.object("VEVENT", ["DTSTART:20261120T100000Z"]), now: Self.now))
        #expect(tasks.queried == ["VTODO"])
        #expect(CalendarFilter().queried == ["VEVENT", "VTODO", "VJOURNAL"])
        // Not a calendar object at all.
        #expect(!Self.month.includes("BEGIN:VCARD\r\nEND:VCARD\r\n", now: Self.now))
    }

    @Test func durationsAndDatesParse() {
        #expect(CalendarFilter.icalDuration("PT1H30M") == 5_400)
        #expect(CalendarFilter.icalDuration("P2W") == 1_209_600)
        #expect(CalendarFilter.icalDuration("-P1D") == -86_400)
        #expect(CalendarFilter.icalDuration("P1X") == nil)
        #expect(CalendarFilter.date("20261124") == CalendarFilter.date("20261124T000000Z"))
        #expect(CalendarFilter.date("2026112") == nil)
        #expect(CalendarFilter.utc(Self.now) == "20261124T120000Z")
    }
}
