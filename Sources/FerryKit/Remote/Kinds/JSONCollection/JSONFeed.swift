import Foundation

/// A second listing of a JSON store that says what changed, for APIs whose main listing does
/// not: `deletions.url =` lists records the API deleted (WordPress's trash, HubSpot's archived
/// contacts), `changes.url =` lists every change, made, updated or deleted (Stripe's events).
///
/// A pass reads the feed after the store's own listing, from where the last one stopped: its
/// own mark (`updated-param` and the rest, as for the store) or its start
/// (`changes.start = PARAM=FIELD`: Stripe's `ending_before=<the newest event seen>`). So a pass
/// with nothing changed costs what the API's own change feed costs:
///
/// | feed        | the store's listing between sweeps                         | the feed's entries  |
/// |-------------|------------------------------------------------------------|---------------------|
/// | `deletions` | read as configured (its own filter, or everything)          | each a deletion of its id |
/// | `changes`   | read only if it has a filter of its own (`updated-param`, `since-param`, `{since}`, a delta); else only on a first sync and a sweep | the record (`changes.record`), or a deletion (`changes.deleted-when`) |
///
/// A `changes` feed read from a start needs that start before the first listing: a first sync
/// (and a sweep) first asks the feed for its newest entry, so what changes while the store is
/// listed is in the feed the next pass reads. A start the API no longer knows (Stripe keeps 30
/// days of events) makes the pass incomplete, and the next one lists everything and sweeps.
///
/// Keys, each also under the store's own name without the prefix: `url` (required),
/// `records-path`, `pagination`, `page-size`, `page-size-param`, `has-more-path`,
/// `total-pages-path`, `first-page`, `total-path`, `id-field`, `version-field` (these default to
/// the store's own), `updated-param`, `since-param`, `since-format`, `since-timezone`,
/// `look-back`; and for `changes` only: `record`, `deleted-when`, `order`, `start`.
public struct JSONFeed: Sendable, Equatable {
    public enum Role: String, Sendable, Equatable, CaseIterable {
        /// Every entry is a record the API deleted.
        case deletions
        /// Entries are changed records, or deletions (`changes.deleted-when`).
        case changes
    }

    public var role: Role
    /// The feed's listing: its URL is ``url``, its records, pages and filter read as a store's.
    public var listing: JSONCollectionOptions {
        get { box.value }
        set { box = ListingBox(newValue) }
    }
    /// A store's options hold their feed, whose listing is options again: a class between
    /// them keeps the value type finite.
    private var box: ListingBox
    public var url: String
    /// `changes.record = PATH`: the record inside each entry (Stripe's `data.object`); "" the
    /// entry is the record.
    public var recordPath = ""
    /// `changes.order = newest-first`: the API lists the newest entry first (Stripe); each
    /// page's entries are applied oldest first.
    public var newestFirst = false
    /// `changes.start = PARAM=FIELD`: where the next read starts, the newest entry's FIELD
    /// (of the entry, not the record) sent as PARAM; the pages of one read walk toward newer
    /// entries the same way (Stripe's `ending_before`).
    public var start: Start?

    init(role: Role, listing: JSONCollectionOptions, url: String) {
        self.role = role
        self.box = ListingBox(listing)
        self.url = url
    }

    public static func == (lhs: JSONFeed, rhs: JSONFeed) -> Bool {
        lhs.role == rhs.role && lhs.listing == rhs.listing && lhs.url == rhs.url && lhs.recordPath == rhs.recordPath
            && lhs.newestFirst == rhs.newestFirst && lhs.start == rhs.start
    }

    private final class ListingBox: Sendable {
        let value: JSONCollectionOptions
        init(_ value: JSONCollectionOptions) { self.value = value }
    }

    public struct Start: Sendable, Equatable {
        public var param: String
        public var field: String
    }

    /// The keys a feed takes, after its prefix.
    static func keys(for role: Role) -> [String] {
        ["url", "records-path", "pagination", "page-size", "page-size-param", "has-more-path", "total-pages-path", "first-page",
         "total-path", "id-field", "version-field", "updated-param", "since-param", "since-format", "since-timezone", "look-back", "lookback"]
            + (role == .changes ? ["record", "deleted-when", "order", "start"] : [])
    }

    /// Every feed key with its prefix, for the kind's key list.
    static var optionKeys: Set<String> {
        Set(Role.allCases.flatMap { role in keys(for: role).map { role.rawValue + "." + $0 } })
    }

    /// The feed a section sets (`changes.url` or `deletions.url`), read with the store's own
    /// options as defaults; nil when it sets none. `valid` turns false on a problem.
    static func read(from reader: inout StoreOptionReader, store: JSONCollectionOptions, valid: inout Bool) -> JSONFeed? {
        let roles = Role.allCases.filter { role in keys(for: role).contains { reader.text(role.rawValue + "." + $0) != nil } }
        guard let role = roles.first else { return nil }
        if roles.count > 1 {
            reader.problem("changes.url", "set either changes.* or deletions.* keys, not both: a changes feed lists deletions too (changes.deleted-when)")
            valid = false
            return nil
        }
        let prefix = role.rawValue + "."
        guard let url = reader.required(prefix + "url", "the feed's URL") else {
            valid = false
            return nil
        }
        if let problem = Self.urlProblem(url, store: reader.url) {
            reader.problem(prefix + "url", problem)
            valid = false
            return nil
        }
        var inner = reader.prefixed(prefix, url: url)
        let listing = JSONCollectionOptions(reading: &inner, inheriting: store)
        reader.adopt(problemsOf: inner)
        guard var listing else {
            valid = false
            return nil
        }
        listing.push = JSONPushTemplates()
        var feed = JSONFeed(role: role, listing: listing, url: url)
        if role == .changes {
            if let path = reader.text("changes.record").map(JSONCollectionOptions.fieldPath) {
                if JSONPath.isValid(path) { feed.recordPath = path } else {
                    reader.problem("changes.record", "\(path.debugDescription) is not a dotted field path such as data.object")
                    valid = false
                }
            }
            if let order = reader.text("changes.order") {
                switch order {
                case "newest-first": feed.newestFirst = true
                case "oldest-first": feed.newestFirst = false
                default:
                    reader.problem("changes.order", "\(order.debugDescription) is not oldest-first or newest-first")
                    valid = false
                }
            }
            if let spec = reader.text("changes.start") {
                let parts = spec.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                if parts.count == 2, !parts[0].isEmpty, JSONPath.isValid(JSONCollectionOptions.fieldPath(parts[1])) {
                    feed.start = Start(param: parts[0], field: JSONCollectionOptions.fieldPath(parts[1]))
                } else {
                    reader.problem("changes.start", "\(spec.debugDescription) is not PARAM=FIELD, as in changes.start = ending_before=id")
                    valid = false
                }
            }
            if feed.start != nil, !feed.newestFirst {
                reader.problem("changes.start", "walks toward newer entries from the newest one seen, which needs changes.order = newest-first (an oldest-first feed is read with changes.updated-param or pagination)")
                valid = false
            }
            if feed.start != nil, listing.updatedParam != nil || listing.sinceParam != nil {
                reader.problem("changes.start", "set either changes.start or a filter (changes.updated-param, changes.since-param), not both")
                valid = false
            }
        }
        if listing.requestBody != nil || listing.deltaStart != nil {
            reader.problem(prefix + "url", "a feed is read with GET requests and its own mark or start; request-body, delta-link and sync-token are the store's own")
            valid = false
        }
        return feed
    }

    /// Why a feed URL cannot be used beside the store's; nil when it can.
    private static func urlProblem(_ url: String, store: String) -> String? {
        guard let feed = URLOrigin(url) else { return "\(url.debugDescription) is not an http or https URL" }
        // The feed is asked with the store's credentials: only on its origin.
        guard let home = URLOrigin(store), home.trusts(feed) else {
            return "is on another origin than the store's url; the feed is asked with the store's credentials, which go to that origin only"
        }
        return nil
    }

    /// How the feed's pages are scanned: the record inside each entry, its id and version as
    /// the store's, and a version only where the feed needs one (a changes feed's records, a
    /// feed read by its own mark).
    func recordLayout(fieldPaths: [String]) -> JSONRecordScanner.Layout {
        let versioned = role == .changes || listing.updatedParam != nil || listing.sinceParam != nil
        return .init(recordsPath: listing.recordsPath, recordPath: recordPath, idPath: listing.idField,
                     versionPath: versioned ? listing.versionField : nil, versionIsDigest: versioned && listing.versionField == nil,
                     fieldPaths: fieldPaths, allowsIntegerIDs: true)
    }

    /// Whether a page's records may commit the feed's cursor one page at a time: read from a
    /// start, each page is newer than the last; read by a mark, only in sorted pages asked
    /// for by cursor, not by position.
    var commitsPerPage: Bool {
        start != nil || (listing.updatedParam != nil && !listing.pagination.isPositional)
    }

    /// What a feed entry does to the store, as a table its tests read:
    ///
    /// | role        | entry                                  | change                     |
    /// |-------------|----------------------------------------|----------------------------|
    /// | `deletions` | any                                    | delete its id              |
    /// | `changes`   | matches `changes.deleted-when`         | delete the record's id     |
    /// | `changes`   | otherwise                              | upsert the record          |
    func deletes(entry: Data) -> Bool {
        switch role {
        case .deletions: true
        case .changes: listing.deletedWhen?.matches(entry) ?? false
        }
    }
}
