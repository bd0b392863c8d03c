import Foundation

/// A JSON value, compared by meaning (`1` and `1.0` are the same number, key order does not
/// matter): what the writers that push JSON (Parse's three-way field merge, a JSON
/// collection's merge patch) compare and send.
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

    /// An object as sent: keys sorted, slashes as they are.
    static func encode(_ object: [String: JSONValue]) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding a tree of plain values cannot fail.
        return (try? encoder.encode(JSONValue.object(object))) ?? Data("{}".utf8)
    }
}
