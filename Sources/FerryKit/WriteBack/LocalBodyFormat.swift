import Foundation

/// What a record's `body` must be for a local write to make sense to the remote: checked by the
/// store table's triggers when the write happens, so a program gets a plain SQLite error at its
/// `INSERT` or `UPDATE` instead of a refusal from the remote minutes later.
public enum LocalBodyFormat: String, Sendable, Equatable {
    /// A JSON object (Parse objects, JSON collection records).
    case jsonObject
    /// A vCard with a UID (CardDAV names the member after it, and servers refuse a card
    /// without one).
    case vcard
    /// An iCalendar object with a UID.
    case icalendar

    /// A SQL condition on `body` (an expression such as `NEW.body`) that is true when the body
    /// is NOT acceptable, and the refusal's words.
    func refusal(of body: String) -> (condition: String, reason: String) {
        switch self {
        case .jsonObject:
            return ("coalesce(json_valid(\(body)), 0) = 0 OR json_type(\(body)) <> 'object'", "body must be a JSON object")
        case .vcard:
            return (Self.missing(begin: "BEGIN:VCARD", in: body), "body must be a vCard (BEGIN:VCARD) with a UID line")
        case .icalendar:
            return (Self.missing(begin: "BEGIN:VCALENDAR", in: body), "body must be an iCalendar object (BEGIN:VCALENDAR) with a UID line")
        }
    }

    /// Property names are case-insensitive (RFC 6350, RFC 5545); a UID may carry parameters.
    private static func missing(begin: String, in body: String) -> String {
        "\(body) IS NULL OR upper(substr(ltrim(\(body), char(32, 9, 13, 10)), 1, \(begin.utf8.count))) <> '\(begin)' "
            + "OR NOT (upper(\(body)) GLOB ('*' || char(10) || 'UID[:;]*'))"
    }

    /// The body as a new record: what `keep-both` pushes as a create beside the remote's
    /// version. JSON loses the remote's own fields (`objectId`, `createdAt`, `updatedAt`), so the
    /// remote assigns new ones; vCard and iCalendar get a new UID, since two members with one
    /// UID are refused by servers.
    func asNewRecord(_ body: String, newUID: String = UUID().uuidString) -> String {
        switch self {
        case .jsonObject:
            guard var object = (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] else { return body }
            for key in ["objectId", "createdAt", "updatedAt"] { object.removeValue(forKey: key) }
            guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]) else { return body }
            return String(decoding: data, as: UTF8.self)
        case .vcard, .icalendar:
            return ContentLineText.replacingUID(in: body, with: newUID)
        }
    }
}

/// Line-level edits of vCard/iCalendar text that keep everything else byte for byte. Lines are
/// split on bytes: Swift's String sees "\r\n" as one Character, never equal to "\n".
enum ContentLineText {
    /// The text's lines without their "\n" (a "\r" before it stays, so joining restores it).
    private static func lines(_ text: String) -> [String] {
        text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Every `UID` property's value replaced (an iCalendar object has one per component of a
    /// recurring event, all the same UID).
    static func replacingUID(in text: String, with uid: String) -> String {
        var lines = lines(text)
        var index = 0
        while index < lines.count {
            let line = lines[index]
            if let colon = line.firstIndex(of: ":"), isUIDName(line[..<colon]) {
                let ending = line.utf8.last == UInt8(ascii: "\r") ? "\r" : ""
                lines[index] = String(line[...colon]) + uid + ending
                // Drop folded continuation lines of the old value.
                while index + 1 < lines.count, lines[index + 1].first == " " || lines[index + 1].first == "\t" {
                    lines.remove(at: index + 1)
                }
            }
            index += 1
        }
        return lines.joined(separator: "\n")
    }

    /// The text's content lines, unfolded, without line endings or empty lines.
    static func unfoldedLines(_ text: String) -> [String] {
        var unfolded: [String] = []
        for line in lines(text) {
            var line = line
            if line.utf8.last == UInt8(ascii: "\r") { line = String(decoding: line.utf8.dropLast(), as: UTF8.self) }
            if let first = line.first, first == " " || first == "\t", !unfolded.isEmpty {
                unfolded[unfolded.count - 1] += line.dropFirst()
            } else if !line.isEmpty {
                unfolded.append(line)
            }
        }
        return unfolded
    }

    /// The first UID's value, unfolded; nil without one.
    static func uid(in text: String) -> String? {
        for line in unfoldedLines(text) {
            if let colon = line.firstIndex(of: ":"), isUIDName(line[..<colon]) {
                let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                return value.isEmpty ? nil : value
            }
        }
        return nil
    }

    private static func isUIDName(_ name: Substring) -> Bool {
        let property = name.split(separator: ";", maxSplits: 1).first ?? ""
        // A group prefix (`item1.UID`) is allowed in vCard.
        let bare = property.split(separator: ".").last ?? ""
        return bare.uppercased() == "UID"
    }
}
