import Foundation

/// How an incremental pass tells the API "what changed since": the store's high-water mark
/// (the greatest version seen) as the API's filter wants it written, moved back by a look-back.
///
/// APIs whose "updated after" filter counts in whole seconds or minutes (WordPress's
/// `modified_after`, Notion's `on_or_after`, Jira's JQL `updated >=`) lose an edit made in the
/// same second as the mark, and an exclusive filter loses it for good: `look-back = 1s` asks
/// again for that second, and the merge skips what did not change. Without a mark (a first
/// sync, a sweep of a store with `since-param`) the value is the earliest time, so the same
/// filter lists everything.
///
/// Keys: `since-format = as-is | iso8601 | unix | unix-ms | minutes-ago | PATTERN` (a date pattern such as
/// `yyyy-MM-dd HH:mm`, as Foundation's DateFormatter reads it), `since-timezone = UTC | +02:00 |
/// Europe/Berlin` (for patterns, and for marks written without a zone), `look-back = DURATION`.
public struct SinceValue: Sendable, Equatable {
    public enum Format: Sendable, Equatable {
        /// The mark as the API wrote it (moved back by the look-back in its own form: seconds
        /// for a number, RFC 3339 for a time).
        case asIs
        case iso8601
        case unix
        case unixMilliseconds
        case pattern(String)
        /// `minutes-ago`: how long before now the time is, as `-Nm` (Jira's JQL reads relative
        /// dates on the server's clock and in no time zone, where an absolute one is read in
        /// the user's zone, which the API does not say). N is rounded up.
        case minutesAgo
    }

    public var format = Format.asIs
    /// `since-timezone`: where a date pattern writes the time, and what a mark without a zone
    /// means; nil (the default): a pattern writes the time in the zone the mark was written in
    /// (Jira writes its stamps, and reads its JQL dates, in the user's own zone), and a mark
    /// without a zone is UTC (WordPress's `modified_gmt`).
    public var timeZone: TimeZone?
    public var lookBack = Duration.zero

    public init(format: Format = .asIs, timeZone: TimeZone? = nil, lookBack: Duration = .zero) {
        self.format = format
        self.timeZone = timeZone
        self.lookBack = lookBack
    }

    /// Whether the mark is sent exactly as stored (no format, no look-back).
    public var isVerbatim: Bool { format == .asIs && lookBack == .zero }

    /// A mark that is not a time: `{since}` cannot be written from it in the configured form.
    public struct UnreadableMark: Error, Sendable, Equatable {
        /// The mark as stored (a version the API wrote).
        public var mark: String
    }

    /// The value for `mark` (nil: the earliest time). A mark that must be read as a time (a
    /// format or a look-back is set) and is none throws: sent as it is, it would be a filter
    /// the API refuses, or worse, one it reads differently.
    public func render(_ mark: String?, now: Date = Date()) throws(UnreadableMark) -> String {
        guard let mark else { return write(Date(timeIntervalSince1970: 0), numeric: false, zone: timeZone, now: now) }
        if isVerbatim { return mark }
        guard let (date, numeric, offset) = Self.parse(mark, in: timeZone ?? Self.utc) else { throw UnreadableMark(mark: mark) }
        return write(date.addingTimeInterval(-lookBack.seconds), numeric: numeric, zone: timeZone ?? offset.flatMap { TimeZone(secondsFromGMT: Int($0)) },
                     now: now)
    }

    private static let utc = TimeZone(identifier: "UTC")!

    /// `zone`: where a pattern writes the time (nil: UTC).
    private func write(_ date: Date, numeric: Bool, zone: TimeZone?, now: Date) -> String {
        switch format {
        case .minutesAgo:
            // The earliest time is as long ago as 1970 is.
            let minutes = max(1, Int((now.timeIntervalSince(date) / 60).rounded(.up)))
            return "-\(minutes)m"
        case .asIs: return numeric ? String(Int64(date.timeIntervalSince1970.rounded(.down))) : Self.rfc3339(date)
        case .iso8601: return Self.rfc3339(date)
        case .unix: return String(Int64(date.timeIntervalSince1970.rounded(.down)))
        case .unixMilliseconds: return String(Int64((date.timeIntervalSince1970 * 1000).rounded(.down)))
        case .pattern(let pattern):
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = zone ?? Self.utc
            formatter.dateFormat = pattern
            return formatter.string(from: date)
        }
    }

    /// RFC 3339 in UTC, with microseconds when the time has a fraction (DateFormatter writes
    /// milliseconds at most).
    static func rfc3339(_ date: Date) -> String {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        let micros = Int(((date.timeIntervalSince1970 - seconds) * 1_000_000).rounded())
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd'T'HH:mm:ss"
        let whole = formatter.string(from: Date(timeIntervalSince1970: seconds))
        guard micros > 0 else { return whole + "Z" }
        return whole + "." + String(String(micros + 1_000_000).dropFirst()) + "Z"
    }

    /// A mark as a time: a number of seconds (or milliseconds, from 10^12 up) since 1970, or an
    /// ISO 8601 time in any form ``TimestampText`` reads (without a zone, in `zone`), whether
    /// it was a number, and the offset it was written with.
    static func parse(_ mark: String, in zone: TimeZone) -> (Date, Bool, Int32?)? {
        let text = mark.trimmingCharacters(in: .whitespaces)
        if let number = Double(text), text.allSatisfy({ $0.isNumber || $0 == "." }) {
            return (Date(timeIntervalSince1970: number >= 1e12 ? number / 1000 : number), true, nil)
        }
        guard let time = TimestampText.parse(text) else { return nil }
        var date = Date(timeIntervalSince1970: Double(time.seconds) + Double(time.nanoseconds) / 1e9)
        if !time.zoned {
            // Read as UTC; the zone's offset at about that moment moves it to the instant meant.
            date = date.addingTimeInterval(-Double(zone.secondsFromGMT(for: date)))
        }
        return (date, false, time.offset)
    }

    /// Reads `since-format`, `since-timezone` and `look-back` over `defaults`; nil when a problem
    /// was reported.
    init?(reading reader: inout StoreOptionReader, defaults: SinceValue = SinceValue()) {
        self = defaults
        var valid = true
        if let text = reader.text("since-format") {
            switch text {
            case "as-is": format = .asIs
            case "iso8601", "rfc3339": format = .iso8601
            case "unix": format = .unix
            case "unix-ms": format = .unixMilliseconds
            case "minutes-ago": format = .minutesAgo
            default:
                if text.contains("yy") || text.contains("HH") || text.contains("dd") {
                    format = .pattern(text)
                } else {
                    reader.problem("since-format", "\(text.debugDescription) is not as-is, iso8601, unix, unix-ms, minutes-ago or a date pattern such as yyyy-MM-dd HH:mm")
                    valid = false
                }
            }
        }
        if let text = reader.text("since-timezone") {
            if let zone = Self.timeZone(text) { timeZone = zone } else {
                reader.problem("since-timezone", "\(text.debugDescription) is not UTC, an offset such as +02:00, or a zone such as Europe/Berlin")
                valid = false
            }
        }
        if let duration = reader.duration("look-back", default: lookBack, allowZero: true, atMost: .seconds(86_400)) { lookBack = duration } else { valid = false }
        guard valid else { return nil }
    }

    static func timeZone(_ text: String) -> TimeZone? {
        if text == "UTC" || text == "Z" { return TimeZone(identifier: "UTC") }
        if let sign = text.first, sign == "+" || sign == "-" {
            let parts = text.dropFirst().split(separator: ":")
            guard parts.count == 2, let hours = Int(parts[0]), let minutes = Int(parts[1]), hours < 24, minutes < 60 else { return nil }
            return TimeZone(secondsFromGMT: (sign == "-" ? -1 : 1) * (hours * 3600 + minutes * 60))
        }
        return TimeZone(identifier: text)
    }
}
