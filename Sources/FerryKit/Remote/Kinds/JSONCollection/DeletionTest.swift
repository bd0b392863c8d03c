import Foundation

/// `deleted-when = PATH [= VALUE]`: how a JSON API marks a record it deleted in its listing (a
/// tombstone), so an incremental pass learns of deletions without a sweep. `deleted-when =
/// deleted` (a `"deleted": true` member), `deleted-when = status = cancelled` (Google's
/// events), `deleted-when = @removed` (Microsoft Graph's delta: the member is there at all).
///
/// Without a VALUE the member must be present and not `null`, `false`, `0` or `""`; with one,
/// its scalar value as text must be VALUE.
public struct DeletionTest: Sendable, Equatable {
    /// The member's path inside a record, split on `.`.
    public var path: [String]
    public var value: String?

    /// Reads `PATH` or `PATH = VALUE`; nil for an empty path.
    public init?(_ spec: String) {
        let parts = spec.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
        let path = JSONCollectionOptions.fieldPath(parts.first ?? "")
        guard JSONPath.isValid(path) else { return nil }
        self.path = JSONPath.components(path)
        value = parts.count > 1 ? parts[1] : nil
        if value?.isEmpty == true { return nil }
    }

    /// Whether the record (its JSON object's bytes) is a tombstone.
    public func matches(_ body: Data) -> Bool {
        // Most records do not name the member at all: no parse for them.
        guard let key = path.last, body.range(of: Data(key.utf8)) != nil,
              var node = try? JSONDecoder().decode(JSONValue.self, from: body) else { return false }
        for part in path {
            guard case .object(let members) = node, let next = members[part] else { return false }
            node = next
        }
        if let value { return Self.text(of: node) == value }
        switch node {
        case .null: return false
        case .bool(let flag): return flag
        case .integer(let number): return number != 0
        case .number(let number): return number != 0
        case .string(let text): return !text.isEmpty
        case .array, .object: return true
        }
    }

    private static func text(of node: JSONValue) -> String? {
        switch node {
        case .string(let text): text
        case .bool(let flag): flag ? "true" : "false"
        case .integer(let number): String(number)
        case .number(let number): String(number)
        case .null, .array, .object: nil
        }
    }
}
