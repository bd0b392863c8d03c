import Foundation

/// The table names of an expanding store's members, whatever their kind: a pure decision over
/// what the store found, read as a spec by its tests (``CollectionSelection`` gives it a
/// `dav-account` store's collections).
///
/// Each member gets a table named `STORE__SEGMENT` from its URL's last segment, which is unique
/// in its parent and stays when the member is renamed. A segment that is not already lowercase
/// letters, digits and `_` is lowercased, stripped of accents, mapped to them and followed by
/// `_` and 8 hex digits of a hash of the segment, so `a-b` and `a_b` never share a table
/// (`Team-Cal` is `team_cal_` and a hash).
///
/// A segment is unique in its parent, not in the store: members whose names would meet are told
/// apart by their qualifier (a collection's content: `STORE__default_addressbook`,
/// `STORE__default_calendar`), and members of one qualifier in different parents by a hash of
/// their URL. A member the replica already knows keeps the table it has (`known`), so a name
/// never changes with what else the store comes to hold.
public enum MemberTables {
    /// A member to name: where it is, its URL's last segment, and what tells it apart from a
    /// member of another sort with that segment.
    public struct Candidate: Sendable, Equatable {
        public var url: String
        public var segment: String
        public var qualifier: String

        public init(url: String, segment: String, qualifier: String) {
            self.url = url
            self.segment = segment
            self.qualifier = qualifier
        }
    }

    /// Why the members cannot have the tables chosen.
    public enum Problem: Error, Sendable, Equatable {
        case sameTable(String, first: String, second: String)
        case tableIsAStore(String, url: String)
    }

    /// The table of each of `candidates`, in order; or why they cannot have them. `otherStores`
    /// are the names of every other configured store (a table may not take one); `known` maps
    /// the URL of each member the replica has synced to its table.
    public static func choose(_ candidates: [Candidate], store: String, otherStores: Set<String>,
                              known: [String: String] = [:]) -> Result<[String], Problem> {
        // Names already taken: the tables of known members named again.
        var taken = Set(candidates.compactMap { known[$0.url] })
        let plain = candidates.map { tableName(store: store, segment: $0.segment) }
        var meeting: [String: Int] = [:]
        for (candidate, name) in zip(candidates, plain) where known[candidate.url] == nil { meeting[name, default: 0] += 1 }
        var tables: [String] = []
        for (candidate, name) in zip(candidates, plain) {
            let table: String
            if let kept = known[candidate.url] {
                table = kept
            } else {
                var names = [name]
                if meeting[name, default: 0] > 1 || taken.contains(name) {
                    names = [tableName(store: store, segment: candidate.segment, qualifier: candidate.qualifier)]
                }
                names.append(tableName(store: store, segment: candidate.segment, qualifier: hash(candidate.url)))
                table = names.first { !taken.contains($0) } ?? names[names.count - 1]
            }
            if let earlier = tables.firstIndex(of: table) {
                return .failure(.sameTable(table, first: candidates[earlier].url, second: candidate.url))
            }
            if otherStores.contains(table) {
                return .failure(.tableIsAStore(table, url: candidate.url))
            }
            taken.insert(table)
            tables.append(table)
        }
        return .success(tables)
    }

    /// `STORE__SEGMENT` (with `_QUALIFIER` when given), at most 63 characters of `[a-z0-9_]` (a
    /// store name's rules) for a store name of at most ``maximumStoreName`` characters.
    public static func tableName(store: String, segment: String, qualifier: String? = nil) -> String {
        let prefix = store + "__"
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

    /// The longest name of an expanding store: its members' tables need room for a segment.
    public static let maximumStoreName = 40

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
}
