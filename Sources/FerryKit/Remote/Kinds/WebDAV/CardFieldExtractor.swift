import Foundation

/// Extracts the fields a CardDAV or CalDAV store projects into columns from the raw text.
///
///     CardFieldExtractor.fields(vCard: "BEGIN:VCARD\r\nUID:1\r\nFN:Ann\r\nEND:VCARD\r\n")
///     // ["UID": "1", "FN": "Ann"]
///
/// - vCard: `UID`, `FN` (first), `EMAIL` and `TEL` (every value, in order, joined by ", "),
///   `ORG` (components joined by ", ", empty ones dropped).
/// - iCalendar: from the first `VEVENT`, `VTODO` or `VJOURNAL` (not its `VALARM`s): `UID`, `SUMMARY`,
///   `DTSTART`, `DTEND` (the value as written; a `TZID` parameter goes to `DTSTART_TZID` /
///   `DTEND_TZID`), `RRULE`.
///
/// Groups (`item1.EMAIL`) and parameters (`;TYPE=work`) are understood; folded lines are
/// unfolded and TEXT values unescaped. Absent properties are absent keys.
public enum CardFieldExtractor {
    /// Why a body has no fields.
    public enum Problem: Error, Sendable, Equatable, CustomStringConvertible {
        case invalidUTF8

        public var description: String {
            switch self {
            case .invalidUTF8: "body is not valid UTF-8"
            }
        }
    }

    /// Fields of a body of the store's kind; invalid UTF-8 throws.
    public static func fields(of body: Data, kind: StoreKind) throws(Problem) -> [String: String] {
        guard let text = String(validating: body, as: UTF8.self) else { throw .invalidUTF8 }
        return kind == .caldav ? fields(iCalendar: text) : fields(vCard: text)
    }

    /// The vCard properties ``fields(vCard:)`` reads; other lines are skipped unparsed.
    static let vCardNames = ["UID", "FN", "EMAIL", "TEL", "ORG", "END"]
    /// The iCalendar properties ``fields(iCalendar:)`` reads.
    static let iCalendarNames = ["BEGIN", "END", "UID", "SUMMARY", "DTSTART", "DTEND", "RRULE"]

    /// Fields of the first vCard in `text`.
    public static func fields(vCard text: String) -> [String: String] {
        var fields: [String: String] = [:]
        var emails: [String] = []
        var phones: [String] = []
        for raw in ContentLine.unfold(text) {
            if ContentLine.property(of: raw, isOneOf: vCardNames) == false { continue }
            guard let line = ContentLine(raw) else { continue }
            switch line.name {
            case "UID", "FN":
                if fields[line.name] == nil { fields[line.name] = ContentLine.unescape(line.value) }
            case "EMAIL":
                let value = ContentLine.unescape(line.value)
                if !value.isEmpty { emails.append(value) }
            case "TEL":
                let value = ContentLine.unescape(line.value)
                if !value.isEmpty { phones.append(value) }
            case "ORG":
                if fields["ORG"] == nil {
                    let parts = ContentLine.components(line.value).map { ContentLine.unescape($0) }.filter { !$0.isEmpty }
                    if !parts.isEmpty { fields["ORG"] = parts.joined(separator: ", ") }
                }
            case "END" where line.value.uppercased() == "VCARD":
                // Only the first card of a multi-card body.
                return finish(fields, emails: emails, phones: phones)
            default:
                break
            }
        }
        return finish(fields, emails: emails, phones: phones)
    }

    private static func finish(_ fields: [String: String], emails: [String], phones: [String]) -> [String: String] {
        var fields = fields
        if !emails.isEmpty { fields["EMAIL"] = emails.joined(separator: ", ") }
        if !phones.isEmpty { fields["TEL"] = phones.joined(separator: ", ") }
        return fields
    }

    /// The components whose properties are the record's fields (RFC 5545 §3.6: the three that
    /// carry a UID and a DTSTART; a VTIMEZONE before them carries neither).
    static let recordComponents: Set<String> = ["VEVENT", "VTODO", "VJOURNAL"]

    /// Fields of the first VEVENT, VTODO or VJOURNAL in `text`.
    public static func fields(iCalendar text: String) -> [String: String] {
        var fields: [String: String] = [:]
        var components: [String] = []
        var inside = false
        for raw in ContentLine.unfold(text) {
            if ContentLine.property(of: raw, isOneOf: iCalendarNames) == false { continue }
            guard let line = ContentLine(raw) else { continue }
            switch line.name {
            case "BEGIN":
                let component = line.value.uppercased()
                components.append(component)
                if components.count == 2, recordComponents.contains(component) { inside = true }
            case "END":
                if inside, components.count == 2 { return fields }
                if !components.isEmpty { components.removeLast() }
            default:
                // Only the component's own properties, not those of a nested VALARM.
                guard inside, components.count == 2 else { continue }
                switch line.name {
                case "UID", "SUMMARY":
                    if fields[line.name] == nil { fields[line.name] = ContentLine.unescape(line.value) }
                case "DTSTART", "DTEND", "RRULE":
                    if fields[line.name] == nil {
                        fields[line.name] = line.value
                        if let zone = line.parameters["TZID"], line.name != "RRULE" { fields[line.name + "_TZID"] = zone }
                    }
                default:
                    break
                }
            }
        }
        return fields
    }
}
