import Foundation

/// Which of an account's collections a `dav-account` store syncs, and under which table
/// names: a pure decision over what discovery found, read as a spec by its tests.
///
/// A collection is synced when
/// - its content is one the store takes (`content =`: address books, calendars, or both);
/// - `collections =` is not set, or one of its patterns matches the collection's display name
///   or the last segment of its URL (case-insensitive; `*` any run of characters, `?` one);
/// - it is an address book, or a calendar that offers one of `components =` (a calendar that
///   does not say which components it takes takes them all, RFC 4791 §5.2.3).
///
/// Each gets a table named `ACCOUNT__SEGMENT` from the URL's last segment (``MemberTables``,
/// the naming every expanding kind shares). A segment is unique in its home, not in the
/// account: many servers make a default address book and a default calendar with one segment
/// (`/addressbooks/USER/default/` and `/calendars/USER/default/`). Collections whose names would
/// meet are told apart by their content (`ACCOUNT__default_addressbook`,
/// `ACCOUNT__default_calendar`), and collections of one content in different homes by a hash of
/// their URL. A collection the replica already knows keeps the table it has.
public struct CollectionSelection: Sendable, Equatable {
    public var contents: Set<WebDAVOptions.Content>
    /// Patterns over display names and segments; empty: every collection.
    public var patterns: [String]
    /// Calendar components (`VEVENT`, `VTODO`, `VJOURNAL`); empty: any.
    public var components: Set<String>
    /// More collections than this chosen is an error, not thousands of tables.
    public var maximum: Int

    public init(contents: Set<WebDAVOptions.Content> = [.addressBook, .calendar], patterns: [String] = [], components: Set<String> = [], maximum: Int = 200) {
        self.contents = contents
        self.patterns = patterns
        self.components = components
        self.maximum = maximum
    }

    /// Whether the store syncs `collection`.
    public func includes(_ collection: DiscoveredCollection) -> Bool {
        guard contents.contains(collection.content) else { return false }
        if !patterns.isEmpty {
            let names = [collection.segment, collection.displayName].compactMap { $0?.lowercased() }
            guard patterns.contains(where: { pattern in names.contains { Self.matches(pattern.lowercased(), $0) } }) else { return false }
        }
        if collection.content == .calendar, !components.isEmpty, !collection.components.isEmpty {
            return !components.isDisjoint(with: collection.components.map { $0.uppercased() })
        }
        return true
    }

    /// The collections `account` syncs, each with its table (``MemberTables``: a collection's
    /// qualifier is its content); or why it cannot sync them. `otherStores` are the names of
    /// every other configured store; `known` maps the URL of each collection the replica has
    /// synced to its table.
    public func choose(from found: [DiscoveredCollection], account: String, otherStores: Set<String>,
                       known: [String: String] = [:]) -> Result<[ChosenCollection], CollectionSelectionError> {
        let included = found.filter(includes)
        guard included.count <= maximum else {
            return .failure(.tooMany(found: included.count, maximum: maximum))
        }
        let candidates = included.map { MemberTables.Candidate(url: $0.url, segment: $0.segment, qualifier: $0.content.tableQualifier) }
        switch MemberTables.choose(candidates, store: account, otherStores: otherStores, known: known) {
        case .success(let tables):
            return .success(zip(included, tables).map { ChosenCollection(collection: $0, table: $1) })
        case .failure(.sameTable(let table, let first, let second)):
            return .failure(.sameTable(table, first: first, second: second))
        case .failure(.tableIsAStore(let table, let url)):
            return .failure(.tableIsAStore(table, url: url))
        }
    }

    /// A collection's table name (``MemberTables/tableName(store:segment:qualifier:)``).
    public static func tableName(account: String, segment: String, qualifier: String? = nil) -> String {
        MemberTables.tableName(store: account, segment: segment, qualifier: qualifier)
    }

    /// The longest name of a `dav-account` store: its tables need room for a segment.
    public static let maximumAccountName = MemberTables.maximumStoreName

    /// Whether `text` matches `pattern`: `*` any run of characters, `?` one character.
    static func matches(_ pattern: String, _ text: String) -> Bool {
        let pattern = Array(pattern), text = Array(text)
        var p = 0, t = 0
        var star: Int?, resume = 0
        while t < text.count {
            if p < pattern.count, pattern[p] == "?" || pattern[p] == text[t] {
                p += 1
                t += 1
            } else if p < pattern.count, pattern[p] == "*" {
                star = p
                resume = t
                p += 1
            } else if let star {
                p = star + 1
                resume += 1
                t = resume
            } else {
                return false
            }
        }
        while p < pattern.count, pattern[p] == "*" { p += 1 }
        return p == pattern.count
    }
}

/// A collection a `dav-account` store syncs, and its table.
public struct ChosenCollection: Sendable, Equatable {
    public var collection: DiscoveredCollection
    public var table: String
}

/// Why an account's collections cannot be synced as chosen.
public enum CollectionSelectionError: Error, Sendable, Equatable, CustomStringConvertible {
    case tooMany(found: Int, maximum: Int)
    case sameTable(String, first: String, second: String)
    case tableIsAStore(String, url: String)

    public var description: String {
        switch self {
        case .tooMany(let found, let maximum):
            "the account has \(found) collections to sync, more than max-collections = \(maximum): choose some with collections = NAME, ... or raise max-collections"
        case .sameTable(let table, let first, let second):
            "collections \(first) and \(second) would both be table \(table): leave one out with collections ="
        case .tableIsAStore(let table, let url):
            "collection \(url) would be table \(table), which is another store's name: rename that store"
        }
    }
}

extension WebDAVOptions.Content {
    /// What tells an address book and a calendar of one segment apart in a table name.
    var tableQualifier: String {
        switch self {
        case .addressBook: "addressbook"
        case .calendar: "calendar"
        }
    }
}
