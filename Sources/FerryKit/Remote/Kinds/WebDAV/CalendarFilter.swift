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
/// ``includes(_:now:)``, which is conservative about recurrence: a recurring component is kept
/// from its first start until its `UNTIL`, or the latest its `COUNT` can reach.
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

    /// Whether an iCalendar object is kept, judged here (a server that refused the query).
    public func includes(_ text: String, now: Date) -> Bool {
        guard let component = Self.mainComponent(of: text) else { return false }
        if !components.isEmpty, !components.contains(component.type) { return false }
        guard let (start, end) = range(now: now) else { return true }
        return component.overlaps(start: start, end: end)
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

    // MARK: - Reading a component

    /// The first VEVENT, VTODO or VJOURNAL of an object, with what a time range is judged by.
    struct Component: Equatable {
        var type: String
        var start: Date?
        var end: Date?
        var due: Date?
        var duration: TimeInterval?
        /// DTSTART was a DATE: the component lasts the whole day unless it says otherwise.
        var allDay = false
        var recurs = false
        /// The RRULE's value, for its end.
        var rule = ""

        /// When the last occurrence starts at the latest: the rule's UNTIL, or for a COUNT
        /// the first start plus COUNT - 1 intervals of its frequency (an upper bound: BYxxx
        /// parts only fit more occurrences into each interval); nil: never ends.
        var lastStart: Date? {
            var parts: [String: String] = [:]
            for part in rule.split(separator: ";") {
                let pair = part.split(separator: "=", maxSplits: 1).map { String($0).uppercased() }
                if pair.count == 2 { parts[pair[0]] = pair[1] }
            }
            if let until = parts["UNTIL"].flatMap(CalendarFilter.date) { return until }
            let period: TimeInterval? = switch parts["FREQ"] {
            case "SECONDLY": 1
            case "MINUTELY": 60
            case "HOURLY": 3_600
            case "DAILY": 86_400
            case "WEEKLY": 604_800
            case "MONTHLY": 31 * 86_400
            case "YEARLY": 366 * 86_400
            default: nil
            }
            guard let first = start ?? due, let count = parts["COUNT"].flatMap({ Int($0) }), let period else { return nil }
            let interval = parts["INTERVAL"].flatMap { Int($0) } ?? 1
            return first.addingTimeInterval(TimeInterval(max(0, count - 1) * interval) * period)
        }

        /// RFC 4791 §9.9, simplified where a server would expand recurrences: a recurring
        /// component overlaps from its first start until its last one can end (or forever).
        func overlaps(start rangeStart: Date, end rangeEnd: Date) -> Bool {
            switch type {
            case "VTODO" where start == nil && due == nil:
                return true
            case "VJOURNAL" where start == nil:
                return false
            default:
                break
            }
            guard let first = start ?? due else { return true }
            let last = end ?? duration.map { first.addingTimeInterval($0) } ?? (allDay ? first.addingTimeInterval(86_400) : due ?? first)
            if recurs {
                let length = last.timeIntervalSince(first)
                return first < rangeEnd && (lastStart.map { $0.addingTimeInterval(max(length, 1)) > rangeStart } ?? true)
            }
            return first < rangeEnd && (last > rangeStart || (last == first && first >= rangeStart))
        }
    }

    static func mainComponent(of text: String) -> Component? {
        var depth = 0
        var component: Component?
        for raw in ContentLine.unfold(text) {
            guard let line = ContentLine(raw) else { continue }
            switch line.name {
            case "BEGIN":
                depth += 1
                if depth == 2, component == nil, allComponents.contains(line.value.uppercased()) {
                    component = Component(type: line.value.uppercased())
                }
            case "END":
                if depth == 2, component != nil { return component }
                depth -= 1
            case "DTSTART" where depth == 2:
                component?.start = date(line.value)
                component?.allDay = line.value.count == 8
            case "DTEND" where depth == 2:
                component?.end = date(line.value)
            case "DUE" where depth == 2:
                component?.due = date(line.value)
            case "DURATION" where depth == 2:
                component?.duration = icalDuration(line.value)
            case "RRULE" where depth == 2:
                component?.recurs = true
                component?.rule = line.value
            default:
                break
            }
        }
        return component
    }

    /// `20240101`, `20240101T100000`, `20240101T100000Z`; a local time is read as UTC (a
    /// day's error at most, against ranges of weeks).
    static func date(_ value: String) -> Date? {
        let digits = value.filter { $0.isNumber }
        guard digits.count == 8 || digits.count == 14 else { return nil }
        var components = DateComponents()
        components.timeZone = TimeZone(identifier: "UTC")
        let numbers = Array(digits).map { Int(String($0))! }
        func number(_ range: Range<Int>) -> Int { numbers[range].reduce(0) { $0 * 10 + $1 } }
        components.year = number(0..<4)
        components.month = number(4..<6)
        components.day = number(6..<8)
        if digits.count == 14 {
            components.hour = number(8..<10)
            components.minute = number(10..<12)
            components.second = number(12..<14)
        }
        return Calendar(identifier: .gregorian).date(from: components)
    }

    /// `P1D`, `PT1H30M`, `P2W` in seconds (RFC 5545 §3.3.6).
    static func icalDuration(_ value: String) -> TimeInterval? {
        var total: TimeInterval = 0
        var number = 0
        var sign: TimeInterval = 1
        for character in value.uppercased() {
            switch character {
            case "-": sign = -1
            case "+", "P", "T": continue
            case "0"..."9": number = number * 10 + Int(String(character))!
            case "W": total += TimeInterval(number) * 604_800; number = 0
            case "D": total += TimeInterval(number) * 86_400; number = 0
            case "H": total += TimeInterval(number) * 3_600; number = 0
            case "M": total += TimeInterval(number) * 60; number = 0
            case "S": total += TimeInterval(number); number = 0
            default: return nil
            }
        }
        return sign * total
    }
}
