import Foundation

/// RFC 8288 `Link` header parsing, for `rel="next"` pagination (GitHub style).
enum LinkHeader {
    /// The target of the first link whose `rel` contains `relation`, resolved against `base`.
    static func target(rel relation: String, in values: [String], base: String) -> String? {
        for value in values {
            for link in splitLinks(value) {
                guard let open = link.firstIndex(of: "<"), let close = link[open...].firstIndex(of: ">") else { continue }
                let target = String(link[link.index(after: open)..<close])
                let parameters = link[link.index(after: close)...].split(separator: ";")
                for parameter in parameters {
                    let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                    guard pair.count == 2, pair[0].lowercased() == "rel" else { continue }
                    let rels = pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\"")).lowercased().split(separator: " ")
                    if rels.contains(Substring(relation)) { return resolve(target, against: base) }
                }
            }
        }
        return nil
    }

    /// Splits a header value at the commas between links (not those inside `<...>` or quotes).
    static func splitLinks(_ value: String) -> [Substring] {
        var parts: [Substring] = []
        var start = value.startIndex
        var inAngle = false, inQuote = false
        for index in value.indices {
            switch value[index] {
            case "<" where !inQuote: inAngle = true
            case ">" where !inQuote: inAngle = false
            case "\"" where !inAngle: inQuote.toggle()
            case "," where !inAngle && !inQuote:
                parts.append(value[start..<index])
                start = value.index(after: index)
            default: break
            }
        }
        parts.append(value[start...])
        return parts
    }

    /// A possibly relative URL resolved against the page it came from.
    static func resolve(_ reference: String, against base: String) -> String? {
        guard let baseURL = URL(string: base), let url = URL(string: reference, relativeTo: baseURL) else { return nil }
        return url.absoluteString
    }
}
