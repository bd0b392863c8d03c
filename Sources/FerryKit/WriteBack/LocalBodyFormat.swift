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
            return (Self.missing(begin: "BEGIN:VCARD", in: body), "body must be a vCard (BEGIN:VCARD) with a UID line that is not empty")
        case .icalendar:
            return (Self.missing(begin: "BEGIN:VCALENDAR", in: body), "body must be an iCalendar object (BEGIN:VCALENDAR) with a UID line that is not empty")
        }
    }

    /// Property names are case-insensitive (RFC 6350, RFC 5545); a UID may carry parameters.
    /// Its value must not be empty or blank: the member is named after it, and servers refuse
    /// a card without one, so an empty `UID:` is refused when written, not at the push.
    private static func missing(begin: String, in body: String) -> String {
        // The first line that starts with UID, up to its line end, and the value after its
        // colon (past any parameters) without blanks. ASCII-only upper() keeps positions.
        let fromUID = "substr(\(body), instr(upper(\(body)), char(10) || 'UID') + 1)"
        let line = "substr(\(fromUID), 1, instr(\(fromUID) || char(10), char(10)) - 1)"
        let value = "trim(substr(\(line), instr(\(line), ':') + 1), char(32, 9, 13))"
        return "\(body) IS NULL OR upper(substr(ltrim(\(body), char(32, 9, 13, 10)), 1, \(begin.utf8.count))) <> '\(begin)' "
            + "OR instr(upper(\(body)), char(10) || 'UID') = 0 OR substr(\(fromUID), 4, 1) NOT IN (':', ';') "
            + "OR instr(\(line), ':') = 0 OR \(value) = ''"
    }

    /// Whether two different texts of one record at one version hold the same record: for
    /// vCards and iCalendar objects, the same content lines in any order (a push keeps the text
    /// as written, and a server that re-serialises it answers the next pull with its own
    /// rendering under the ETag the push got). JSON texts that differ are different records.
    func sameContent(_ stored: String, _ incoming: String) -> Bool {
        switch self {
        case .jsonObject: false
        case .vcard, .icalendar: ContentLineComparison.same(stored, incoming)
        }
    }

    /// The body as a new record: what `keep-both` pushes as a create beside the remote's
    /// version. JSON loses the fields the remote assigns (`remoteFields`: Parse's `objectId`,
    /// `createdAt`, `updatedAt`; a JSON collection's id and version fields), so the remote
    /// assigns new ones; vCard and iCalendar get a new UID, since two members with one UID are
    /// refused by servers.
    func asNewRecord(_ body: String, droppingFields remoteFields: [String], newUID: String = UUID().uuidString) -> String {
        switch self {
        case .jsonObject:
            guard var object = (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] else { return body }
            for key in remoteFields { object.removeValue(forKey: key) }
            guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]) else { return body }
            return String(decoding: data, as: UTF8.self)
        case .vcard, .icalendar:
            return ContentLineText.replacingUID(in: body, with: newUID)
        }
    }
}
