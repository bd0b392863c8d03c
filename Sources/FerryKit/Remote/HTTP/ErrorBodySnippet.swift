import Foundation

/// The useful words of an error answer's body, for an error line and `ferry status`: the title
/// or text of an HTML page (not its markup), the message field of a JSON error, the text of an
/// XML error, or the start of plain text. Bounded, printable, one line, and never holding a
/// configured secret even when a server echoes one back.
enum ErrorBodySnippet {
    /// Characters kept at most.
    static let limit = 160
    /// Bytes of a body looked at: an error page's useful part is near its start.
    static let scanned = 16 << 10

    /// A short summary of `body`, or nil when it says nothing.
    static func summary(of body: Data, contentType: String?, redacting secrets: [String] = []) -> String? {
        guard !body.isEmpty else { return nil }
        let text = String(decoding: body.prefix(scanned), as: UTF8.self)
        let type = contentType?.lowercased() ?? ""
        let start = text.drop { $0.isWhitespace }.prefix(64).lowercased()
        var summary: String?
        if type.contains("html") || start.hasPrefix("<!doctype html") || start.hasPrefix("<html") {
            summary = html(text)
        } else if type.contains("json") || start.hasPrefix("{") {
            summary = json(body.prefix(scanned)) ?? plain(text)
        } else if type.contains("xml") || start.hasPrefix("<?xml") || start.hasPrefix("<") {
            summary = markupText(text)
        } else {
            summary = plain(text)
        }
        guard var result = summary.map(plain), !result.isEmpty else { return nil }
        for secret in secrets where !secret.isEmpty {
            result = result.replacingOccurrences(of: secret, with: "<redacted>")
        }
        if result.count > limit { result = String(result.prefix(limit - 1)) + "…" }
        return result
    }

    /// An HTML page's `<title>`, and its first heading when it adds to it; else its text.
    static func html(_ text: String) -> String? {
        let title = element("title", in: text).map(markupText) ?? nil
        let heading = element("h1", in: text).map(markupText) ?? nil
        switch (title, heading) {
        case let (title?, heading?) where !title.isEmpty && !heading.isEmpty:
            return title.contains(heading) || heading.contains(title) ? (title.count >= heading.count ? title : heading) : "\(title): \(heading)"
        case let (title?, _) where !title.isEmpty: return title
        case let (_, heading?) where !heading.isEmpty: return heading
        default:
            var body = text
            // Scripts and styles are not words a person should read.
            for tag in ["script", "style", "head"] { body = removing(tag, from: body) }
            return markupText(body)
        }
    }

    /// The message of a JSON error object (`error`, `message`, `error_description`, `detail`,
    /// `title`, `description`), else nil.
    static func json(_ data: Data) -> String? {
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return nil }
        var parts: [String] = []
        for key in ["error", "message", "error_description", "detail", "title", "description"] {
            if let text = object[key] as? String, !text.isEmpty, !parts.contains(text) { parts.append(text) }
            if let nested = object[key] as? [String: Any], let text = nested["message"] as? String, !text.isEmpty { parts.append(text) }
        }
        return parts.isEmpty ? nil : parts.joined(separator: ": ")
    }

    /// The text between tags, entities for `&amp; &lt; &gt; &quot; &#39;` decoded; an XML error
    /// with no text gives the names of its elements (`DAV:error: valid-sync-token`).
    static func markupText(_ text: String) -> String? {
        var words = ""
        var names: [String] = []
        var inTag = false
        var tag = ""
        for character in text {
            if inTag {
                if character == ">" {
                    inTag = false
                    let name = tag.split(whereSeparator: { $0 == " " || $0 == "/" || $0 == "\t" || $0 == "\n" }).first.map(String.init) ?? ""
                    if !tag.hasPrefix("/"), !tag.hasPrefix("?"), !tag.hasPrefix("!"), !name.isEmpty {
                        names.append(name.split(separator: ":").last.map(String.init) ?? name)
                    }
                    words += " "
                } else {
                    tag.append(character)
                }
            } else if character == "<" {
                inTag = true
                tag = ""
            } else {
                words.append(character)
            }
        }
        let decoded = words.replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#39;", with: "'")
            .replacingOccurrences(of: "&nbsp;", with: " ").replacingOccurrences(of: "&amp;", with: "&")
        let result = plain(decoded)
        if result.isEmpty, !names.isEmpty { return names.prefix(4).joined(separator: ": ") }
        return result.isEmpty ? nil : result
    }

    /// One line: control characters and runs of white space become one space.
    static func plain(_ text: String) -> String {
        var result = ""
        var pendingSpace = false
        for scalar in text.unicodeScalars {
            if scalar.properties.isWhitespace || scalar.value < 0x20 || scalar.value == 0x7F || scalar == "\u{FFFD}" {
                pendingSpace = !result.isEmpty
                continue
            }
            if pendingSpace { result.append(" ") }
            pendingSpace = false
            result.unicodeScalars.append(scalar)
        }
        return result
    }

    /// The content of the first `<name ...>...</name>`, case-insensitively.
    private static func element(_ name: String, in text: String) -> String? {
        guard let open = text.range(of: "<\(name)", options: .caseInsensitive),
              let openEnd = text[open.upperBound...].firstIndex(of: ">"),
              let close = text[openEnd...].range(of: "</\(name)", options: .caseInsensitive) else { return nil }
        return String(text[text.index(after: openEnd)..<close.lowerBound])
    }

    private static func removing(_ name: String, from text: String) -> String {
        var text = text
        while let open = text.range(of: "<\(name)", options: .caseInsensitive) {
            guard let close = text[open.upperBound...].range(of: "</\(name)>", options: .caseInsensitive) else {
                text.removeSubrange(open.lowerBound...)
                break
            }
            text.removeSubrange(open.lowerBound..<close.upperBound)
        }
        return text
    }
}
