import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

@Suite("Version order")
struct VersionOrderTests {
    /// (incoming, stored, how incoming stands).
    static let pairs: [(String, String, VersionOrder.Ordering)] = [
        ("10", "9", .newer), ("9", "10", .older), ("5", "5", .same), ("-1", "-2", .newer), ("+3", "2", .newer),
        ("007", "6", .newer), ("007", "7", .same), ("99999999999999999999", "1", .newer), // overflow: compared as strings
        ("2024-05-01T10:00:00.000Z", "2024-04-30T23:59:59.000Z", .newer), ("abc", "abd", .older), ("ab", "a", .newer), ("", "a", .older),
        ("1", "", .newer), ("é", "e", .newer), ("12a", "12", .newer), ("v1", "v1", .same),
        // Times compare as instants, however the API writes them: a fraction of any length or
        // none (whose bytes sort 'Z' after '.'), offsets as +HH:MM, +HHMM (Jira) or Z.
        ("2024-01-15T15:08:24Z", "2024-01-15T15:08:24.5Z", .older),
        ("2024-01-15T15:08:24.5Z", "2024-01-15T15:08:24Z", .newer),
        ("2024-01-15T15:08:24.000Z", "2024-01-15T15:08:24Z", .same),
        ("2024-01-15T15:08:24.237+0000", "2024-01-15T15:08:24.237Z", .same),
        ("2024-10-27T02:10:00.000+0100", "2024-10-27T02:30:00.000+0200", .newer),
        ("2024-01-15T15:08:24.1234567Z", "2024-01-15T15:08:24.123456Z", .newer),
        ("2024-01-15T15:09Z", "2024-01-15T15:08:59.999Z", .newer),
        ("2024-01-15 15:08:24", "2024-01-15T15:08:24", .same),
        // A zoned and an unzoned time name no common instant: their bytes decide.
        ("2024-01-15T15:08:24Z", "2024-01-15T15:08:24", .newer),
    ]

    @Test func swiftAndSQLAgree() throws {
        let directory = try TemporaryDirectory()
        let replica = try ReplicaDatabase(path: directory.path("replica.db"))
        let newer = try replica.connection.prepare("SELECT ferry_version_newer(?1, ?2), ferry_version_order(?1, ?2)")
        for (incoming, stored, order) in Self.pairs {
            #expect(VersionOrder.order(incoming, stored) == order, "\(incoming) vs \(stored)")
            #expect(VersionOrder.isNewer(incoming, than: stored) == (order == .newer), "\(incoming) vs \(stored)")
            let reverse: VersionOrder.Ordering = order == .newer ? .older : order == .older ? .newer : .same
            #expect(VersionOrder.order(stored, incoming) == reverse, "\(stored) vs \(incoming)")
            try newer.bind(incoming, at: 1)
            try newer.bind(stored, at: 2)
            #expect(try newer.step())
            #expect((newer.int64(at: 0) == 1) == (order == .newer), "SQL: \(incoming) vs \(stored)")
            #expect(newer.int64(at: 1) == Int64(order.rawValue), "SQL order: \(incoming) vs \(stored)")
            newer.reset()
        }
    }

    /// What is neither an integer nor a time keeps the definition it always had: byte order.
    @Test func otherVersionsCompareAsBytes() {
        var generator = SeededGenerator(seed: 42)
        let alphabet = Array("0123456789-:TZ+.ab")
        for _ in 0..<5_000 {
            let a = String((0..<Int.random(in: 0...8, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
            let b = String((0..<Int.random(in: 0...8, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
            guard Int64(a) == nil || Int64(b) == nil, TimestampText.parse(a) == nil || TimestampText.parse(b) == nil else { continue }
            let expected: VersionOrder.Ordering = a == b ? .same : b.utf8.lexicographicallyPrecedes(a.utf8) ? .newer : .older
            #expect(VersionOrder.order(a, b) == expected, "\(a) vs \(b)")
        }
    }
}

@Suite("Timestamps as APIs write them")
struct TimestampTextTests {
    @Test(arguments: [
        ("2024-01-15T15:08:24Z", 1_705_331_304, 0, 0),
        ("2024-01-15T15:08:24.237+0000", 1_705_331_304, 237_000_000, 0),
        ("2024-01-15T16:08:24.237+01:00", 1_705_331_304, 237_000_000, 3600),
        ("2024-01-15T10:08:24-05", 1_705_331_304, 0, -18_000),
        ("2024-01-15T20:38:24+0530", 1_705_331_304, 0, 19_800),
        ("2024-01-15t15:08:24,5z", 1_705_331_304, 500_000_000, 0),
        ("2024-01-15T15:08:24.1234567890Z", 1_705_331_304, 123_456_789, 0),
        ("2024-01-15 15:08:24 +0000", 1_705_331_304, 0, 0),
        ("2024-01-15 15:08:24 UTC", 1_705_331_304, 0, 0),
        ("2024-01-15T15:08:24", 1_705_331_304, 0, nil),
        ("2024-01-15T15:08", 1_705_331_280, 0, nil),
        ("2024-01-15", 1_705_276_800, 0, nil),
        ("1969-12-31T23:59:59Z", -1, 0, 0),
        ("2000-02-29T00:00:00Z", 951_782_400, 0, 0),
    ] as [(String, Int64, Int32, Int32?)])
    func reads(_ text: String, _ seconds: Int64, _ nanoseconds: Int32, _ offset: Int32?) {
        #expect(TimestampText.parse(text) == TimestampText(seconds: seconds, nanoseconds: nanoseconds, offset: offset))
    }

    @Test(arguments: ["", "2024", "2024-01", "2024-1-15", "2024-01-15T", "2024-01-15T15", "2024-01-15T15:08:24.", "2024-02-30",
                      "2024-13-01", "2023-02-29", "2024-01-15T24:00:00Z", "2024-01-15T15:08:24+25:00", "2024-01-15T15:08:24Zx",
                      "2024-01-15T15:08:24 ", "2024-01-15X15:08:24", "v2024-01-15", "1705331304"])
    func refuses(_ text: String) {
        #expect(TimestampText.parse(text) == nil, "\(text)")
    }

    /// The same instants Foundation reads, over a spread of dates.
    @Test func agreesWithFoundation() {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        var generator = SeededGenerator(seed: 7)
        for _ in 0..<2_000 {
            let date = Date(timeIntervalSince1970: Double(Int64.random(in: -2_000_000_000...4_000_000_000, using: &generator)))
            let text = formatter.string(from: date)
            #expect(TimestampText.parse(text)?.seconds == Int64(date.timeIntervalSince1970), "\(text)")
        }
    }
}
