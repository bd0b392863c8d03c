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

    /// Reads `username`, `password` and `multiget-batch`.
    init?(content: Content, reading reader: inout StoreOptionReader) {
        self.init(content: content)
        let batch = reader.integer("multiget-batch", default: 100, in: 1...10_000)
        let authentication = reader.basicAuthentication()
        guard let batch, let authentication else { return nil }
        multigetBatch = batch
        self.authentication = authentication
        guard WebDAVCollection(url: reader.url) != nil else {
            reader.problem("url", "not a collection URL: \(reader.url.redactingUserInfo)")
            return nil
        }
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
        name: "carddav", optionKeys: ["multiget-batch", "username"], secretKeys: ["password"],
        reportsDeletions: true, versionComparison: .opaque, fetchesByID: true,
        localBody: .vcard, pushes: true, readOptions: { WebDAVOptions(content: .addressBook, reading: &$0) })

    /// A CalDAV calendar through WebDAV sync-collection (RFC 6578, RFC 4791).
    public static let caldav = StoreKind(
        name: "caldav", optionKeys: ["multiget-batch", "username"], secretKeys: ["password"],
        reportsDeletions: true, versionComparison: .opaque, fetchesByID: true,
        localBody: .icalendar, pushes: true, readOptions: { WebDAVOptions(content: .calendar, reading: &$0) })
}
