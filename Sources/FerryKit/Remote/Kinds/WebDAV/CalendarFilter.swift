import Foundation

/// What part of a calendar a `caldav` store keeps: a time range that moves with the clock
/// (`time-range = -90d..+365d`: from 90 days ago to a year ahead) and component types
/// (`components = events, tasks`).
///
/// A pass with a filter asks the server for the matching members with `calendar-query`
/// (RFC 4791 §7.8, one query per component type, a `time-range` in each), which also expands
/// recurrences, and lists only those, so rows that no longer match (deleted on the server, or
/// left the range as time moved) are swept from the replica like deleted records, within
/// `max-delete-share`. A server that refuses the query is listed whole and filtered here by
/// ``includes(_:now:)``, which applies RFC 4791 §9.9 as a server would (``CalendarTimeRange``:
/// every instance of a recurring component, moved instances where they moved to).
public struct CalendarFilter: Sendable, Equatable {
    /// How far back and ahead of now the range reaches; nil: no range.
    public var past: Duration?
    public var future: Duration?
    /// `VEVENT`, `VTODO`, `VJOURNAL`; empty: all three.
    public var components: Set<String>

    public init(past: Duration? = nil, future: Duration? = nil, components: Set<String> = []) {
        self.past = past
        self.future = future
        self.components = components
    }

    static let allComponents = ["VEVENT", "VTODO", "VJOURNAL"]

    /// The components queried, in a fixed order.
    var queried: [String] { Self.allComponents.filter { components.isEmpty || components.contains($0) } }

    /// The range at `now`: [start, end).
    public func range(now: Date) -> (start: Date, end: Date)? {
        guard let past, let future else { return nil }
        return (now.addingTimeInterval(-past.seconds), now.addingTimeInterval(future.seconds))
    }

    /// Whether an iCalendar object is kept, judged here (a server that refused the query). An
    /// object libical cannot read at all is kept: dropping it would lose a record no server
    /// said was out of range.
    public func includes(_ text: String, now: Date) -> Bool {
        let present = Self.componentTypes(in: text)
        let wanted = queried.filter(present.contains)
        guard !wanted.isEmpty else { return false }
        guard let (start, end) = range(now: now) else { return true }
        return CalendarTimeRange.matches(text, types: wanted, start: start, end: end) ?? true
    }

    /// The time-range attribute value for `calendar-query`: `20260101T000000Z`.
    static func utc(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        return formatter.string(from: date)
    }

    /// `-90d..+365d` (either sign may be left out; the start must come before the end).
    static func parseRange(_ text: String) -> (past: Duration, future: Duration)? {
        let parts = text.replacingOccurrences(of: " ", with: "").components(separatedBy: "..")
        guard parts.count == 2, let start = signed(parts[0], defaultSign: -1), let end = signed(parts[1], defaultSign: 1) else { return nil }
        guard start < end else { return nil }
        return (.zero - start, end)
    }

    private static func signed(_ text: String, defaultSign: Int) -> Duration? {
        var text = Substring(text)
        var sign = defaultSign
        if text.first == "-" { sign = -1; text = text.dropFirst() } else if text.first == "+" { sign = 1; text = text.dropFirst() }
        if text == "0" { return .zero }
        guard let duration = ConfigurationUnits.duration(String(text)) else { return nil }
        return sign < 0 ? .zero - duration : duration
    }

    /// The VEVENT, VTODO and VJOURNAL types an object holds (components of its VCALENDAR).
    static func componentTypes(in text: String) -> Set<String> {
        var depth = 0
        var types = Set<String>()
        for raw in ContentLine.unfold(text) {
            guard let line = ContentLine(raw) else { continue }
            switch line.name {
            case "BEGIN":
                depth += 1
                let type = line.value.uppercased()
                if depth == 2, allComponents.contains(type) { types.insert(type) }
            case "END":
                depth -= 1
            default:
                break
            }
        }
        return types
    }
}
