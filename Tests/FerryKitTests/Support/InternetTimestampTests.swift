import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// The schedule's timestamps read and write as `ISO8601DateFormatter` with fractional seconds
/// does, without building one per date.
@Suite struct InternetTimestampTests {
    @Test func writesWhatISO8601DateFormatterWrites_andReadsItBack() {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        var generator = SeededGenerator(seed: 20261124)
        for _ in 0..<2_000 {
            // Microseconds from 1970 to 2100: rounded to the nearest millisecond, as the
            // formatter does.
            let microseconds = Double(generator.next() % 4_102_444_800_000_000)
            let date = Date(timeIntervalSince1970: microseconds / 1_000_000)
            let text = InternetTimestamp.string(from: date)
            #expect(text == formatter.string(from: date))
            let read = InternetTimestamp.date(from: text)
            #expect(read.map { abs($0.timeIntervalSince(date)) <= 0.000_501 } == true)
            #expect(read.map { InternetTimestamp.string(from: $0) } == text)
        }
        #expect(InternetTimestamp.string(from: Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000Z")
        #expect(InternetTimestamp.date(from: "2026-11-24T22:32:40Z") == Date(timeIntervalSince1970: 1_795_559_560))
        #expect(InternetTimestamp.date(from: "2026-11-24T23:32:40+01:00") == Date(timeIntervalSince1970: 1_795_559_560))
        #expect(InternetTimestamp.date(from: "yesterday") == nil)
    }

    /// The lookback of a Parse pass: its cursor's updatedAt moved back, in Parse's form.
    @Test func parseLooksBackFromItsCursorInItsOwnForm() {
        #expect(ParseSource.stamp("2024-05-01T12:00:00.000Z", minus: .seconds(2)) == "2024-05-01T11:59:58.000Z")
        #expect(ParseSource.stamp("2024-01-01T00:00:00.250Z", minus: .milliseconds(500)) == "2023-12-31T23:59:59.750Z")
        #expect(ParseSource.stamp("not a date", minus: .seconds(2)) == nil)
    }

    /// Every string survives a round trip through the JSON Foundation reads, control
    /// characters and quotes included.
    @Test func jsonTextQuotesWhatJSONSerializationReadsBack() throws {
        for text in ["", "plain", "quote \" and \\ backslash", "lines\n\r\ttabs", "\u{0}\u{1}\u{1f}", "ünïcødé ✓ 🚀", "a/b"] {
            let quoted = JSONText.quoted(text)
            let read = try JSONSerialization.jsonObject(with: Data("[\(quoted)]".utf8)) as? [String]
            #expect(read == [text], "\(quoted)")
        }
        #expect(JSONText.quoted("\u{1}") == #""\u0001""#)
    }
}
