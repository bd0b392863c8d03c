/// A CardDAV or CalDAV store's settings (`kind = carddav`, `kind = caldav`), checked when the
/// configuration is loaded.
public struct WebDAVOptions: StoreOptions, Equatable {
    /// What the collection holds.
    public enum Content: Sendable, Equatable {
        /// vCards (RFC 6352), `kind = carddav`.
        case addressBook
        /// iCalendar objects (RFC 4791), `kind = caldav`.
        case calendar
    }

    public var content: Content
    public var authentication = HTTPAuthentication.none
    /// Members per addressbook-multiget / calendar-multiget REPORT.
    public var multigetBatch = 100
    /// The part of a calendar kept (`time-range`, `components`); nil: all of it.
    public var calendarFilter: CalendarFilter?
    /// Whether a push reads each member before writing it (`read-before-write`).
    public var readBeforeWrite = ReadBeforeWrite.auto

    /// `read-before-write = auto | yes | no`: a push to a server that ignores `If-None-Match`
    /// and `If-Match` must read a member before writing it, or it overwrites another client's
    /// create and deletes another client's edit.
    public enum ReadBeforeWrite: String, Sendable, Equatable, CaseIterable {
        /// Read first on servers known to ignore the preconditions (SOGo).
        case auto
        case always = "yes"
        case never = "no"
    }

    public init(content: Content) {
        self.content = content
    }

    public var kind: StoreKind {
        switch content {
        case .addressBook: .carddav
        case .calendar: .caldav
        }
    }

    public func makeSource(_ context: RemoteSourceContext) throws(SyncError) -> any RemoteSource {
        try WebDAVSource(context, options: self)
    }

    public var credentials: [Secret] { authentication.secrets }

    /// A calendar's filter: a range and the components.
    public var identity: String {
        guard let filter = calendarFilter else { return "" }
        return "time-range=\(filter.past.map { "\($0)" } ?? "")..\(filter.future.map { "\($0)" } ?? "") components=\(filter.components.sorted().joined(separator: ","))"
    }

    /// Reads `username`, `password`, `multiget-batch`, `read-before-write` and, for calendars,
    /// `time-range` and `components`.
    init?(content: Content, reading reader: inout StoreOptionReader) {
        self.init(content: content)
        let batch = reader.integer("multiget-batch", default: 100, in: 1...10_000)
        let authentication = reader.basicAuthentication()
        let filter = content == .calendar ? Self.readCalendarFilter(&reader) : .some(nil)
        let readFirst = Self.readReadBeforeWrite(&reader)
        guard let batch, let authentication, let filter, let readFirst else { return nil }
        multigetBatch = batch
        self.authentication = authentication
        calendarFilter = filter
        readBeforeWrite = readFirst
        guard WebDAVCollection(url: reader.url) != nil else {
            reader.problem("url", "not a collection URL: \(reader.url.redactingUserInfo)")
            return nil
        }
    }

    /// `time-range` and `components`: nil (with a problem) when invalid, `.some(nil)` when
    /// neither is set.
    static func readCalendarFilter(_ reader: inout StoreOptionReader) -> CalendarFilter?? {
        var filter = CalendarFilter()
        if let text = reader.optional("time-range") {
            guard let (past, future) = CalendarFilter.parseRange(text) else {
                reader.problem("time-range", "expected START..END as signed durations from now (-90d..+365d: from 90 days ago to a year ahead), START before END; got '\(text)'")
                return nil
            }
            filter.past = past
            filter.future = future
        }
        guard let components = readComponents(&reader) else { return nil }
        filter.components = components
        return filter == CalendarFilter() ? .some(nil) : filter
    }

    /// `read-before-write`: `auto` when not set; nil, with a problem, when not a choice.
    static func readReadBeforeWrite(_ reader: inout StoreOptionReader) -> ReadBeforeWrite? {
        guard let text = reader.optional("read-before-write") else { return .auto }
        guard let choice = ReadBeforeWrite(rawValue: text.lowercased()) else {
            reader.problem("read-before-write", "expected one of auto, yes, no; got '\(text)'")
            return nil
        }
        return choice
    }

    private static let componentNames = ["events": "VEVENT", "tasks": "VTODO", "journals": "VJOURNAL"]

    /// `components = events, tasks, journals`: the iCalendar names; empty when not set.
    static func readComponents(_ reader: inout StoreOptionReader) -> Set<String>? {
        guard let text = reader.optional("components") else { return [] }
        var components: Set<String> = []
        for word in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces).lowercased() }) {
            guard let component = componentNames[word] else {
                reader.problem("components", "expected events, tasks or journals (comma-separated), got '\(word)'")
                return nil
            }
            components.insert(component)
        }
        return components
    }

    /// The data element a member's body comes in.
    var dataElement: String {
        switch content {
        case .addressBook: "address-data"
        case .calendar: "calendar-data"
        }
    }
}

extension StoreKind {
    /// A CardDAV address book through WebDAV sync-collection (RFC 6578, RFC 6352).
    public static let carddav = StoreKind(
        name: "carddav", optionKeys: ["multiget-batch", "username", "read-before-write"], secretKeys: ["password"],
        reportsDeletions: true, versionComparison: .opaque, fetchesByID: true,
        localBody: .vcard, pushes: true, readOptions: { WebDAVOptions(content: .addressBook, reading: &$0) })

    /// A CalDAV calendar through WebDAV sync-collection (RFC 6578, RFC 4791).
    public static let caldav = StoreKind(
        name: "caldav", optionKeys: ["multiget-batch", "username", "time-range", "components", "read-before-write"], secretKeys: ["password"],
        reportsDeletions: true, versionComparison: .opaque, fetchesByID: true,
        localBody: .icalendar, pushes: true, readOptions: { WebDAVOptions(content: .calendar, reading: &$0) })
}
