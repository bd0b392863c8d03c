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
/// Each gets a table named `ACCOUNT__SEGMENT` from the URL's last segment, which is unique in
/// its home set and stays when the collection is renamed. A segment that is not already
/// lowercase letters, digits and `_` is lowercased, stripped of accents, mapped to them and
/// followed by `_` and 8 hex digits of a hash of the segment, so `a-b` and `a_b` never share a
/// table (`Team-Cal` is `team_cal_` and a hash).
///
/// A segment is unique in its home, not in the account: many servers make a default address
/// book and a default calendar with one segment (`/addressbooks/USER/default/` and
/// `/calendars/USER/default/`). Collections whose names would meet are told apart by their
/// content (`ACCOUNT__default_addressbook`, `ACCOUNT__default_calendar`), and collections of
/// one content in different homes by a hash of their URL. A collection the replica already
/// knows keeps the table it has (`known`), so a name never changes with what else the account
/// comes to hold.
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

    /// The collections `account` syncs, each with its table; or why it cannot sync them.
    /// `otherStores` are the names of every other configured store (a table may not take one);
    /// `known` maps the URL of each collection the replica has synced to its table.
    public func choose(from found: [DiscoveredCollection], account: String, otherStores: Set<String>,
                       known: [String: String] = [:]) -> Result<[ChosenCollection], CollectionSelectionError> {
        let included = found.filter(includes)
        guard included.count <= maximum else {
            return .failure(.tooMany(found: included.count, maximum: maximum))
        }
        // Names already taken: the tables of known collections chosen again.
        var taken = Set(included.compactMap { known[$0.url] })
        let plain = included.map { Self.tableName(account: account, segment: $0.segment) }
        var meeting: [String: Int] = [:]
        for (collection, name) in zip(included, plain) where known[collection.url] == nil { meeting[name, default: 0] += 1 }
        var chosen: [ChosenCollection] = []
        for (collection, name) in zip(included, plain) {
            let table: String
            if let kept = known[collection.url] {
                table = kept
            } else {
                var candidates = [name]
                if meeting[name, default: 0] > 1 || taken.contains(name) {
                    candidates = [Self.tableName(account: account, segment: collection.segment, qualifier: collection.content.tableQualifier)]
                }
                candidates.append(Self.tableName(account: account, segment: collection.segment, qualifier: Self.hash(collection.url)))
                table = candidates.first { !taken.contains($0) } ?? candidates[candidates.count - 1]
            }
            if let earlier = chosen.first(where: { $0.table == table }) {
                return .failure(.sameTable(table, first: earlier.collection.url, second: collection.url))
            }
            if otherStores.contains(table) {
                return .failure(.tableIsAStore(table, url: collection.url))
            }
            taken.insert(table)
            chosen.append(ChosenCollection(collection: collection, table: table))
        }
        return .success(chosen)
    }

    /// `ACCOUNT__SEGMENT` (with `_QUALIFIER` when given), at most 63 characters of
    /// `[a-z0-9_]` (a store name's rules) for an account name of at most
    /// ``maximumAccountName`` characters.
    public static func tableName(account: String, segment: String, qualifier: String? = nil) -> String {
        let prefix = account + "__"
        let suffix = qualifier.map { "_" + $0 } ?? ""
        var mapped = ""
        let folded = segment.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil)
        for scalar in folded.unicodeScalars {
            switch scalar {
            case "a"..."z", "0"..."9", "_": mapped.unicodeScalars.append(scalar)
            default: if !mapped.hasSuffix("_") { mapped += "_" }
            }
        }
        let lossy = mapped != segment || mapped.isEmpty
        if !lossy, prefix.count + mapped.count + suffix.count <= 63 { return prefix + mapped + suffix }
        // Mapped or too long: as much of it as leaves room for the hash.
        var head = String(mapped.prefix(max(0, 63 - prefix.count - suffix.count - 9)))
        while head.hasSuffix("_") { head.removeLast() }
        return prefix + head + (head.isEmpty ? "" : "_") + hash(segment) + suffix
    }

    /// The longest name of a `dav-account` store: its tables need room for a segment.
    public static let maximumAccountName = 40

    /// FNV-1a, 32 bits, as 8 hex digits: stable across runs and builds (unlike `Hasher`).
    static func hash(_ text: String) -> String {
        var value: UInt32 = 0x811C_9DC5
        for byte in text.utf8 {
            value ^= UInt32(byte)
            value = value &* 0x0100_0193
        }
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 8 - digits.count) + digits
    }

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
