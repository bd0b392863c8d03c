import Foundation

/// A JSON value, compared by meaning (`1` and `1.0` are the same number, key order does not
/// matter), for the three-way merge of a Parse object.
enum JSONValue: Equatable, Codable, Sendable {
    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() { self = .null }
        else if let value = try? container.decode(Bool.self) { self = .bool(value) }
        else if let value = try? container.decode(Int64.self) { self = .integer(value) }
        else if let value = try? container.decode(Double.self) { self = .number(value) }
        else if let value = try? container.decode(String.self) { self = .string(value) }
        else if let value = try? container.decode([JSONValue].self) { self = .array(value) }
        else { self = .object(try container.decode([String: JSONValue].self)) }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.string(let a), .string(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)): a == b
        default:
            if let a = lhs.numeric, let b = rhs.numeric { a == b } else { false }
        }
    }

    var numeric: Double? {
        switch self {
        case .integer(let value): Double(value)
        case .number(let value): value
        default: nil
        }
    }

    /// A JSON object's members; nil for anything else.
    static func object(parsing text: String) -> [String: JSONValue]? {
        guard case .object(let members)? = try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)) else { return nil }
        return members
    }
}

/// How a Parse object's local change becomes a `PUT` that keeps concurrent writers safe: only
/// the fields changed locally are sent, a number changed by a delta is sent as `Increment`
/// (so a counter bumped here and on the remote ends with both bumps, the seed's read count), a
/// removed field as `Delete`. When the remote changed since the base, the merge is three-way,
/// field by field:
///
/// | field changed locally | on the remote since the base      | sent                     |
/// |-----------------------|-----------------------------------|--------------------------|
/// | no                    | (anything)                        | nothing (theirs stays)   |
/// | yes, a number by Δ    | (anything, even the same Δ)       | `Increment` Δ            |
/// | yes                   | no                                | the local value          |
/// | yes                   | yes, to the same value            | nothing                  |
/// | yes                   | yes, to another value             | a conflict               |
///
/// Parse's own fields (`objectId`, `createdAt`, `updatedAt`, and `ACL` unless changed) are never
/// sent as data.
enum ParseFieldMerge {
    enum Outcome: Equatable {
        /// The body of the `PUT` (a JSON object, possibly empty: nothing to send).
        case update([String: JSONValue])
        /// Fields changed on both sides to different values.
        case conflict(fields: [String])
    }

    static let builtIn: Set<String> = ["objectId", "createdAt", "updatedAt"]

    static func update(base: [String: JSONValue], local: [String: JSONValue], remote: [String: JSONValue]?) -> Outcome {
        var body: [String: JSONValue] = [:]
        var conflicting: [String] = []
        let keys = Set(base.keys).union(local.keys).subtracting(builtIn)
        for key in keys.sorted() {
            let before = base[key]
            let after = local[key]
            guard before != after else { continue }
            // A number changed by a delta is an increment whatever the remote did: the remote
            // moving by the same amount is another writer's bump, not this one (a send that may
            // have applied already is the writer's to detect, by the version it was sent on).
            if let from = before?.numeric, let to = after?.numeric, case let delta = to - from {
                if case .integer(let a)? = before, case .integer(let b)? = after {
                    body[key] = .object(["__op": .string("Increment"), "amount": .integer(b - a)])
                } else {
                    body[key] = .object(["__op": .string("Increment"), "amount": .number(delta)])
                }
                continue
            }
            if let remote, remote[key] == after { continue }
            if let remote, remote[key] != before {
                conflicting.append(key)
                continue
            }
            body[key] = after ?? .object(["__op": .string("Delete")])
        }
        return conflicting.isEmpty ? .update(body) : .conflict(fields: conflicting)
    }

    /// A create's body: the local object without Parse's own fields.
    static func create(local: [String: JSONValue]) -> [String: JSONValue] {
        local.filter { !builtIn.contains($0.key) }
    }

    static func encode(_ object: [String: JSONValue]) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding a tree of plain values cannot fail.
        return (try? encoder.encode(JSONValue.object(object))) ?? Data("{}".utf8)
    }
}
