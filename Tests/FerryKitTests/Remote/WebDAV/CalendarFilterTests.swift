import Foundation
import Testing
@testable import FerryKit

/// The local half of a calendar filter (a server that refuses calendar-query), as a spec.
@Suite struct CalendarFilterTests {
    /// 2026-11-24T12:00:00Z.
    static let now = Date(timeIntervalSince1970: 1_795_521_600)

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

    @Test func recurrencesAreExpandedAsAServerWould() {
        let filter = Self.month
        #expect(filter.includes(Self.object("VEVENT", ["DTSTART:20200101T100000Z", "RRULE:FREQ=WEEKLY"]), now: Self.now))
        #expect(!filter.includes(Self.object("VEVENT", ["DTSTART:20200101T100000Z", "RRULE:FREQ=WEEKLY;UNTIL=20210101T000000Z"]), now: Self.now))
        #expect(!filter.includes(Self.object("VEVENT", ["DTSTART:20240101T100000Z", "RRULE:FREQ=WEEKLY;COUNT=4"]), now: Self.now))
        #expect(filter.includes(Self.object("VEVENT", ["DTSTART:20240101T100000Z", "RRULE:FREQ=MONTHLY;COUNT=40"]), now: Self.now))
        #expect(filter.includes(Self.object("VEVENT", ["DTSTART:20250101T100000Z", "RRULE:FREQ=DAILY;INTERVAL=30;COUNT=40"]), now: Self.now))
        #expect(!filter.includes(Self.object("VEVENT", ["DTSTART:20250101T100000Z", "RRULE:FREQ=DAILY;INTERVAL=30;COUNT=19"]), now: Self.now))
        // Not started yet.
        #expect(!filter.includes(Self.object("VEVENT", ["DTSTART:20280101T100000Z", "RRULE:FREQ=DAILY"]), now: Self.now))
        // A yearly rule whose instances all miss the range, although its span covers it.
        #expect(!filter.includes(Self.object("VEVENT", ["DTSTART:20200301T100000Z", "DTEND:20200301T110000Z", "RRULE:FREQ=YEARLY"]), now: Self.now))
        // An instance that starts before the range and lasts into it.
        #expect(filter.includes(Self.object("VEVENT", ["DTSTART:20261020T100000Z", "DURATION:P10D", "RRULE:FREQ=YEARLY"]), now: Self.now))
    }

    /// The cases a hand-written filter got wrong: every recurrence source counts.
    @Test func rdatesExdatesAndMovedInstancesCount() {
        let filter = Self.month
        // A date added by RDATE falls in the range.
        #expect(filter.includes(Self.object("VEVENT", ["DTSTART:20240101T100000Z", "DTEND:20240101T110000Z", "RDATE:20261201T100000Z"]), now: Self.now))
        // The only instance in range is excluded.
        #expect(!filter.includes(Self.object("VEVENT", ["DTSTART:20261124T100000Z", "RRULE:FREQ=DAILY;COUNT=1", "EXDATE:20261124T100000Z"]), now: Self.now))
        // A series long over, one of whose instances was moved into the range.
        #expect(filter.includes(Self.series(master: ["DTSTART:20250101T100000Z", "DTEND:20250101T110000Z", "RRULE:FREQ=WEEKLY;COUNT=3"],
                                            moved: ["RECURRENCE-ID:20250108T100000Z", "DTSTART:20261201T100000Z", "DTEND:20261201T110000Z"]), now: Self.now))
        // A series whose only instance in range was moved out of it.
        #expect(!filter.includes(Self.series(master: ["DTSTART:20261201T100000Z", "DTEND:20261201T110000Z", "RRULE:FREQ=DAILY;COUNT=1"],
                                             moved: ["RECURRENCE-ID:20261201T100000Z", "DTSTART:20240101T100000Z", "DTEND:20240101T110000Z"]), now: Self.now))
    }

    /// Local times are read in their own zone: the range ends 2027-01-23T12:00Z, 07:00 in New York.
    @Test func timesAreReadInTheirZones() {
        let filter = Self.month
        #expect(filter.includes(Self.object("VEVENT", ["DTSTART;TZID=America/New_York:20270123T060000"]), now: Self.now))
        #expect(!filter.includes(Self.object("VEVENT", ["DTSTART;TZID=America/New_York:20270123T080000"]), now: Self.now))
    }

    @Test func tasksAndJournalsFollowRFC4791() {
        let filter = Self.month
        #expect(filter.includes(Self.object("VTODO", ["SUMMARY:no dates"]), now: Self.now))
        #expect(filter.includes(Self.object("VTODO", ["DUE:20261201T000000Z"]), now: Self.now))
        #expect(!filter.includes(Self.object("VTODO", ["DUE:20250101T000000Z"]), now: Self.now))
        #expect(!filter.includes(Self.object("VJOURNAL", ["SUMMARY:no date"]), now: Self.now))
        #expect(filter.includes(Self.object("VJOURNAL", ["DTSTART;VALUE=DATE:20261124"]), now: Self.now))
        #expect(!filter.includes(Self.object("VJOURNAL", ["DTSTART:20250101T100000Z"]), now: Self.now))
        // A task completed long ago, with nothing else to place it: out of range (§9.9).
        #expect(!filter.includes(Self.object("VTODO", ["COMPLETED:20250101T000000Z"]), now: Self.now))
        #expect(filter.includes(Self.object("VTODO", ["COMPLETED:20261201T000000Z"]), now: Self.now))
        #expect(!filter.includes(Self.object("VTODO", ["CREATED:20270201T000000Z"]), now: Self.now))
        // Started before the range, due after it: it spans the range.
        #expect(filter.includes(Self.object("VTODO", ["DTSTART:20260101T000000Z", "DUE:20271231T000000Z"]), now: Self.now))
        #expect(!filter.includes(Self.object("VTODO", ["DTSTART:20260101T000000Z", "DUE:20260201T000000Z"]), now: Self.now))
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

    @Test func theQueryNamesTheRangeInUTC() {
        #expect(CalendarFilter.utc(Self.now) == "20261124T120000Z")
    }

    /// A VCALENDAR with a recurring master and one moved instance (same UID).
    static func series(master: [String], moved: [String]) -> String {
        (["BEGIN:VCALENDAR", "VERSION:2.0", "BEGIN:VEVENT", "UID:s"] + master + ["END:VEVENT", "BEGIN:VEVENT", "UID:s"] + moved
            + ["END:VEVENT", "END:VCALENDAR"]).joined(separator: "\r\n")
    }
}
