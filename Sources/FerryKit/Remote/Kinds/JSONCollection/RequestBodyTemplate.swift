import Foundation

/// `request-body =`: the JSON a POST API is asked for each page with (Notion's database query,
/// a search endpoint, GraphQL's `{"query": ..., "variables": {...}}`), with what changes from
/// request to request written as placeholders:
///
/// | placeholder | is | where it stands alone (`"after": {cursor}`) | inside a string |
/// |---|---|---|---|
/// | `{cursor}` | the next page's token (`pagination = body:PATH`) | the token as a string; on the first page the member is left out (null in an array) | the token; empty on the first page |
/// | `{since}` | ``SinceValue``: the mark as the filter wants it | the value as a string | the value |
/// | `{page_size}` | `page-size` | a number | the number |
/// | `{offset}` | the records read so far (`pagination = body-offset`) | a number; `"{offset}"` a string | the number |
///
/// The template is checked at load: with its placeholders filled it must be a JSON object.
public struct RequestBodyTemplate: Sendable, Equatable {
    public let text: String

    /// Nil when `text` is no JSON object with its placeholders filled.
    public init?(_ text: String) {
        self.text = text
        guard let data = try? Self.render(text, cursor: "c", since: "s", pageSize: 1, offset: 0),
              (try? JSONSerialization.jsonObject(with: data)) is [String: Any] else { return nil }
    }

    public var usesCursor: Bool { text.contains("{cursor}") }
    public var usesSince: Bool { text.contains("{since}") }
    public var usesOffset: Bool { text.contains("{offset}") }

    /// What a lone placeholder stands as while the template is parsed (no control character:
    /// JSON refuses those in strings).
    private static let sentinel = "ferry-placeholder-7f3a9c-"

    /// The body for one request. The template rendered at load, so failing now is a bug.
    public func render(cursor: String?, since: String, pageSize: Int, offset: Int = 0) -> Data {
        do {
            return try Self.render(text, cursor: cursor, since: since, pageSize: pageSize, offset: offset)
        } catch {
            preconditionFailure("request-body checked at load no longer renders: \(error)")
        }
    }

    private static func render(_ text: String, cursor: String?, since: String, pageSize: Int, offset: Int) throws -> Data {
        // Placeholders standing alone become sentinel strings, so the template parses as JSON;
        // those inside strings are filled in the tree, where escaping is JSONSerialization's.
        // An offset in quotes stays a string (HubSpot's search takes `"after": "100"`).
        var source = text.replacingOccurrences(of: "\"{offset}\"", with: "\"\(sentinel)offset_text\"")
        for name in ["cursor", "since", "page_size", "offset"] {
            source = source.replacingOccurrences(of: "\"{\(name)}\"", with: "\"\(sentinel)\(name)\"")
            source = replacingBare("{\(name)}", with: "\"\(sentinel)\(name)\"", in: source)
        }
        let tree = try JSONSerialization.jsonObject(with: Data(source.utf8))
        let values: [String: Any] = ["cursor": cursor as Any, "since": since, "page_size": pageSize, "offset": offset, "offset_text": String(offset)]
        let filled = fill(tree, values: values, textValues: ["cursor": cursor ?? "", "since": since, "page_size": String(pageSize),
                                                             "offset": String(offset)])
        return try JSONSerialization.data(withJSONObject: filled ?? NSNull(), options: [.sortedKeys, .withoutEscapingSlashes])
    }

    /// `placeholder` outside JSON strings replaced by `replacement`.
    private static func replacingBare(_ placeholder: String, with replacement: String, in text: String) -> String {
        var out = ""
        var inString = false
        var escaped = false
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            if !inString, text[index...].hasPrefix(placeholder) {
                out += replacement
                index = text.index(index, offsetBy: placeholder.count)
                continue
            }
            if inString {
                if escaped { escaped = false } else if character == "\\" { escaped = true } else if character == "\"" { inString = false }
            } else if character == "\"" {
                inString = true
            }
            out.append(character)
            index = text.index(after: index)
        }
        return out
    }

    /// The tree with sentinels replaced (nil: leave this value out) and placeholders inside
    /// strings filled.
    private static func fill(_ value: Any, values: [String: Any], textValues: [String: String]) -> Any? {
        switch value {
        case let object as [String: Any]:
            var out: [String: Any] = [:]
            for (key, member) in object {
                if let filled = fill(member, values: values, textValues: textValues) { out[key] = filled }
            }
            return out
        case let array as [Any]:
            return array.map { fill($0, values: values, textValues: textValues) ?? NSNull() }
        case let string as String:
            if string.hasPrefix(sentinel) {
                let name = String(string.dropFirst(sentinel.count))
                switch values[name] {
                case let number as Int: return number
                case let text as String: return text
                default: return nil
                }
            }
            var filled = string
            for (name, text) in textValues { filled = filled.replacingOccurrences(of: "{\(name)}", with: text) }
            return filled
        default:
            return value
        }
    }
}
