import CICal
import Foundation
import Synchronization

/// RFC 4791 §9.9, the CALDAV:time-range test, for one calendar object resource: whether any
/// instance of its VEVENT, VTODO or VJOURNAL overlaps a range. This is what a server answers a
/// `calendar-query` with, done here for a server that refuses the query.
///
/// Recurrence is libical's (Debian's `libical-dev`): RRULE, RDATE and EXDATE expanded in the
/// component's own time zone (a VTIMEZONE in the object, else the system's zoneinfo), so DST,
/// BYxxx parts, COUNT and UNTIL come out as a server's expansion would. An instance that a
/// component with its RECURRENCE-ID overrides is judged by that component (its own start,
/// end or due), not where the series would have put it. Floating times are read as UTC, as
/// the servers in the suites read them without a calendar time zone.
///
/// | component | has | overlaps [start, end) when |
/// |---|---|---|
/// | VEVENT | DTEND, or DURATION > 0 | start < instance end, and end > instance start |
/// | VEVENT | DURATION 0, DTEND = DTSTART, or neither with a DATE-TIME | start <= instance start < end |
/// | VEVENT | neither, DTSTART a DATE | start < instance start + 1 day, and end > instance start |
/// | VTODO | DTSTART and DURATION | start <= DTSTART + DURATION, and (end > DTSTART or end >= DTSTART + DURATION) |
/// | VTODO | DTSTART and DUE | (start < DUE or start <= DTSTART), and (end > DTSTART or end >= DUE) |
/// | VTODO | DTSTART only | start <= DTSTART < end |
/// | VTODO | DUE only | start < DUE <= end |
/// | VTODO | COMPLETED and CREATED | (start <= CREATED or start <= COMPLETED), and (end >= CREATED or end >= COMPLETED) |
/// | VTODO | COMPLETED only | start <= COMPLETED <= end |
/// | VTODO | CREATED only | end > CREATED |
/// | VTODO | none of them | always |
/// | VJOURNAL | DTSTART a DATE-TIME | start <= DTSTART < end |
/// | VJOURNAL | DTSTART a DATE | start < DTSTART + 1 day, and end > DTSTART |
/// | VJOURNAL | no DTSTART | never |
enum CalendarTimeRange {
    /// Whether `text` has a component of one of `types` with an instance overlapping
    /// [`start`, `end`); nil when libical cannot read the text at all (the caller decides what
    /// that means). The text is parsed once, whatever the number of types.
    static func matches(_ text: String, types: [String], start: Date, end: Date) -> Bool? {
        let kinds = types.compactMap(Self.kind)
        guard !kinds.isEmpty else { return false }
        let range = Range(start: time_t(start.timeIntervalSince1970.rounded(.down)), end: time_t(end.timeIntervalSince1970.rounded(.up)))
        // libical keeps process-wide state (its time zone cache, icalerrno): one caller at a time.
        return libical.withLock { _ in
            guard let root = text.withCString({ icalparser_parse_string($0) }) else { return nil }
            defer { icalcomponent_free(root) }
            return kinds.contains { judge(root, kind: $0, range: range) }
        }
    }

    private static let libical = Mutex<Void>(())

    /// Whether a component of `kind` in the parsed object `root` has an instance in `range`.
    private static func judge(_ root: OpaquePointer, kind: icalcomponent_kind, range: Range) -> Bool {
        var components: [OpaquePointer] = []
        if icalcomponent_isa(root) == kind {
            components.append(root)
        } else {
            var child = icalcomponent_get_first_component(root, kind)
            while let component = child {
                components.append(component)
                child = icalcomponent_get_next_component(root, kind)
            }
        }
        let overrides = components.filter(isOverride)
        // An overriding component answers for its own instance.
        if overrides.contains(where: { Instance(of: $0).overlaps(range, kind: kind) }) { return true }
        let overridden = Set(overrides.map { seconds(icalcomponent_get_recurrenceid($0)) })
        for master in components where !isOverride(master) {
            if matchesSeries(master, kind: kind, range: range, skipping: overridden) { return true }
        }
        return false
    }

    /// `[start, end)` in seconds since 1970.
    struct Range {
        var start: time_t
        var end: time_t
    }

    private static func kind(_ type: String) -> icalcomponent_kind? {
        switch type {
        case "VEVENT": ICAL_VEVENT_COMPONENT
        case "VTODO": ICAL_VTODO_COMPONENT
        case "VJOURNAL": ICAL_VJOURNAL_COMPONENT
        default: nil
        }
    }

    private static func isOverride(_ component: OpaquePointer) -> Bool {
        icalcomponent_get_first_property(component, ICAL_RECURRENCEID_PROPERTY) != nil
    }

    /// Whether an instance of a series (or the single occurrence of a component that does not
    /// recur) overlaps the range.
    private static func matchesSeries(_ master: OpaquePointer, kind: icalcomponent_kind, range: Range, skipping overridden: Set<time_t>) -> Bool {
        let first = Instance(of: master)
        let recurs = icalcomponent_get_first_property(master, ICAL_RRULE_PROPERTY) != nil
            || icalcomponent_get_first_property(master, ICAL_RDATE_PROPERTY) != nil
        guard recurs, let base = first.start else { return first.overlaps(range, kind: kind) }
        // Instances are asked for over a window wide enough that one starting before the range
        // and reaching into it is among them; each is then judged exactly.
        let reach = max(first.length, 0) + 2 * 86_400
        var collector = InstanceStarts(limit: 100_000)
        withUnsafeMutablePointer(to: &collector) { pointer in
            icalcomponent_foreach_recurrence(master, utc(range.start - reach), utc(range.end + 2 * 86_400), { _, span, context in
                guard let span, let context else { return }
                context.assumingMemoryBound(to: InstanceStarts.self).pointee.add(span.pointee.start)
            }, pointer)
        }
        for start in collector.starts where !overridden.contains(start) {
            if first.shifted(by: start - base).overlaps(range, kind: kind) { return true }
        }
        return false
    }

    /// The starts libical hands over, up to a limit (a rule with no end over a wide range).
    private struct InstanceStarts {
        var limit: Int
        var starts: [time_t] = []

        mutating func add(_ start: time_t) {
            if starts.count < limit { starts.append(start) }
        }
    }

    /// What §9.9 reads of one instance, in seconds since 1970.
    struct Instance {
        var start: time_t?
        var startIsDate = false
        var end: time_t?
        var duration: time_t?
        var due: time_t?
        var completed: time_t?
        var created: time_t?

        init(of component: OpaquePointer) {
            if icalcomponent_get_first_property(component, ICAL_DTSTART_PROPERTY) != nil {
                let value = icalcomponent_get_dtstart(component)
                start = seconds(value)
                startIsDate = value.is_date != 0
            }
            if icalcomponent_get_first_property(component, ICAL_DTEND_PROPERTY) != nil {
                end = seconds(icalcomponent_get_dtend(component))
            } else if icalcomponent_get_first_property(component, ICAL_DURATION_PROPERTY) != nil {
                duration = time_t(icaldurationtype_as_int(icalcomponent_get_duration(component)))
            }
            if icalcomponent_get_first_property(component, ICAL_DUE_PROPERTY) != nil {
                due = seconds(icalcomponent_get_due(component))
            }
            if let property = icalcomponent_get_first_property(component, ICAL_COMPLETED_PROPERTY) {
                completed = seconds(icalproperty_get_completed(property))
            }
            if let property = icalcomponent_get_first_property(component, ICAL_CREATED_PROPERTY) {
                created = seconds(icalproperty_get_created(property))
            }
        }

        /// How long an instance lasts from its start (0 when it names no end).
        var length: time_t {
            guard let start else { return 0 }
            if let end { return end - start }
            if let duration { return duration }
            if let due { return due - start }
            return startIsDate ? 86_400 : 0
        }

        /// The instance `offset` seconds later (a recurrence): its end and due move with it.
        func shifted(by offset: time_t) -> Instance {
            var copy = self
            copy.start = start.map { $0 + offset }
            copy.end = end.map { $0 + offset }
            copy.due = due.map { $0 + offset }
            return copy
        }

        func overlaps(_ range: Range, kind: icalcomponent_kind) -> Bool {
            let (rangeStart, rangeEnd) = (range.start, range.end)
            switch kind {
            case ICAL_VEVENT_COMPONENT:
                guard let start else { return false }
                if let end, end > start { return rangeStart < end && rangeEnd > start }
                if let duration, duration > 0 { return rangeStart < start + duration && rangeEnd > start }
                if end == nil, duration == nil, startIsDate { return rangeStart < start + 86_400 && rangeEnd > start }
                return rangeStart <= start && rangeEnd > start
            case ICAL_VTODO_COMPONENT:
                if let start, let duration {
                    return rangeStart <= start + duration && (rangeEnd > start || rangeEnd >= start + duration)
                }
                if let start, let due {
                    return (rangeStart < due || rangeStart <= start) && (rangeEnd > start || rangeEnd >= due)
                }
                if let start { return rangeStart <= start && rangeEnd > start }
                if let due { return rangeStart < due && rangeEnd >= due }
                if let completed, let created {
                    return (rangeStart <= created || rangeStart <= completed) && (rangeEnd >= created || rangeEnd >= completed)
                }
                if let completed { return rangeStart <= completed && rangeEnd >= completed }
                if let created { return rangeEnd > created }
                return true
            default:
                guard let start else { return false }
                if startIsDate { return rangeStart < start + 86_400 && rangeEnd > start }
                return rangeStart <= start && rangeEnd > start
            }
        }
    }

    /// A time as seconds since 1970: in its own zone, UTC when it has none (floating, DATE).
    static func seconds(_ time: icaltimetype) -> time_t {
        icaltime_as_timet_with_zone(time, time.zone ?? icaltimezone_get_utc_timezone())
    }

    private static func utc(_ seconds: time_t) -> icaltimetype {
        icaltime_from_timet_with_zone(seconds, 0, icaltimezone_get_utc_timezone())
    }
}
