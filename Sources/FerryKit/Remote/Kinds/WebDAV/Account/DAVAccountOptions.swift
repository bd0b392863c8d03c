import Foundation

/// A `dav-account` store's settings: every address book and calendar of a CardDAV/CalDAV
/// account, found by discovery from `url` (the server, the principal or a home set).
///
/// The account itself has no table. Each collection it syncs is a store of its own, named
/// after its table (``CollectionSelection/tableName(account:segment:)``), with the account's
/// settings (interval, push, conflict, columns, headers...) and kind `carddav` or `caldav`: it
/// is scheduled, pushed, reported and measured like a configured store. The account's own
/// pass runs discovery, records the collections in `ferry_collections` and keeps the view
/// named after the account over all of their tables.
public struct DAVAccountOptions: StoreOptions, Equatable {
    public var authentication = HTTPAuthentication.none
    public var multigetBatch = 100
    public var selection = CollectionSelection()
    /// What each calendar keeps (`time-range`; `components` also chooses calendars).
    public var calendarFilter: CalendarFilter?
    public var readBeforeWrite = WebDAVOptions.ReadBeforeWrite.auto

    public init() {}

    public var kind: StoreKind { .davAccount }

    public func makeSource(_ context: RemoteSourceContext) throws(SyncError) -> any RemoteSource {
        // An account's pass is discovery (AccountPassOperation); its collections have sources.
        throw SyncError(.configuration, store: context.store.name, message: "a dav-account store has no source of its own")
    }

    public var credentials: [Secret] { authentication.secrets }

    /// The contents discovery looks for.
    var contents: [WebDAVOptions.Content] {
        [WebDAVOptions.Content.addressBook, .calendar].filter(selection.contents.contains)
    }

    /// The store that syncs `chosen` for `account`: the account's settings, the collection's
    /// URL and kind, its table's name.
    public func collectionStore(of account: StoreConfiguration, _ chosen: ChosenCollection) -> StoreConfiguration {
        var options = WebDAVOptions(content: chosen.collection.content)
        options.authentication = authentication
        options.multigetBatch = multigetBatch
        options.readBeforeWrite = readBeforeWrite
        if chosen.collection.content == .calendar { options.calendarFilter = calendarFilter }
        var store = account
        store.name = chosen.table
        store.url = chosen.collection.url
        store.options = AnyStoreOptions(options)
        // The account's heartbeat is pinged after the account's pass, not after each collection's.
        store.heartbeat = nil
        store.account = account.name
        return store
    }

    /// Reads `username`, `password`, `multiget-batch`, `content`, `collections`, `components`,
    /// `time-range`, `max-collections` and `read-before-write`.
    init?(reading reader: inout StoreOptionReader) {
        let batch = reader.integer("multiget-batch", default: 100, in: 1...10_000)
        let authentication = reader.basicAuthentication()
        let maximum = reader.integer("max-collections", default: 200, in: 1...10_000)
        let contents = Self.readContents(&reader)
        let filter = WebDAVOptions.readCalendarFilter(&reader)
        let readFirst = WebDAVOptions.readReadBeforeWrite(&reader)
        var fine = true
        if reader.store.count > CollectionSelection.maximumAccountName {
            reader.problem("kind", "a dav-account store's name may have at most \(CollectionSelection.maximumAccountName) characters (its collections' tables are named after it)")
            fine = false
        }
        if WebDAVCollection(url: reader.url) == nil {
            reader.problem("url", "not an http or https URL: \(reader.url.redactingUserInfo)")
            fine = false
        }
        guard fine, let batch, let authentication, let maximum, let contents, let filter, let readFirst else { return nil }
        multigetBatch = batch
        readBeforeWrite = readFirst
        calendarFilter = filter
        self.authentication = authentication
        let patterns = (reader.optional("collections") ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        selection = CollectionSelection(contents: contents, patterns: patterns, components: filter?.components ?? [], maximum: maximum)
    }

    private static func readContents(_ reader: inout StoreOptionReader) -> Set<WebDAVOptions.Content>? {
        guard let text = reader.optional("content") else { return [.addressBook, .calendar] }
        var contents: Set<WebDAVOptions.Content> = []
        for word in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces).lowercased() }) {
            switch word {
            case "address-books": contents.insert(.addressBook)
            case "calendars": contents.insert(.calendar)
            default:
                reader.problem("content", "expected address-books, calendars or both (comma-separated), got '\(word)'")
                return nil
            }
        }
        return contents
    }
}

extension StoreKind {
    /// Every address book and calendar of a CardDAV/CalDAV account, each its own table.
    public static let davAccount = StoreKind(
        name: "dav-account", optionKeys: ["multiget-batch", "username", "collections", "content", "components", "max-collections", "time-range", "read-before-write"],
        secretKeys: ["password"], reportsDeletions: true, versionComparison: .opaque, urlSchemes: ["http", "https", "mailto"], fetchesByID: true,
        localBody: .vcard, pushes: true, readOptions: { DAVAccountOptions(reading: &$0) })
}
