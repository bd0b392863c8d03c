import Foundation

/// One unfolded content line of a vCard (RFC 6350 §3.3) or iCalendar object (RFC 5545 §3.1):
/// `[group "."] name *(";" param) ":" value`.
public struct ContentLine: Sendable, Equatable {
    /// The group (`item1` in `item1.EMAIL`), uppercased; `nil` without one.
    public var group: String?
    /// The property name, uppercased (`EMAIL`).
    public var name: String
    /// Parameters by uppercased name; values with quotes removed, several values kept
    /// comma-joined as sent.
    public var parameters: [String: String]
    /// The raw value, still escaped.
    public var value: String

    public init(group: String? = nil, name: String, parameters: [String: String] = [:], value: String) {
        self.group = group
        self.name = name
        self.parameters = parameters
        self.value = value
    }

    /// Parses one unfolded line; `nil` for a line without a `:` or without a name.
    public init?(_ line: Substring) {
        // The value starts at the first ':' outside a quoted parameter value. The delimiters
        // are ASCII, so the scan runs over UTF-8 bytes (any index found is a character
        // boundary): per character it cost a fifth of a first sync's CPU.
        let bytes = line.utf8
        var inQuotes = false
        var colon: Substring.Index?
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                inQuotes.toggle()
            } else if byte == UInt8(ascii: ":"), !inQuotes {
                colon = index
                break
            }
            bytes.formIndex(after: &index)
        }
        guard let colon else { return nil }
        let head = line[..<colon]
        value = String(line[bytes.index(after: colon)...])

        let pieces = Self.splitUnquoted(head, on: UInt8(ascii: ";"))
        guard let nameField = pieces.first, !nameField.isEmpty else { return nil }
        if let dot = nameField.utf8.lastIndex(of: UInt8(ascii: ".")) {
            group = String(nameField[..<dot]).uppercased()
            name = String(nameField[nameField.utf8.index(after: dot)...]).uppercased()
        } else {
            group = nil
            name = String(nameField).uppercased()
        }
        guard !name.isEmpty else { return nil }
        var parameters: [String: String] = [:]
        for piece in pieces.dropFirst() {
            let equals = piece.utf8.firstIndex(of: UInt8(ascii: "="))
            let key = equals.map { piece[..<$0] } ?? piece
            var value = equals.map { String(piece[piece.utf8.index(after: $0)...]) } ?? ""
            value.removeAll { $0 == "\"" }
            let name = String(key).uppercased()
            // A repeated parameter (TYPE=work;TYPE=voice) accumulates.
            if let existing = parameters[name] {
                parameters[name] = existing + "," + value
            } else {
                parameters[name] = value
            }
        }
        self.parameters = parameters
    }

    /// Whether the line's property is one of `names` (uppercase ASCII), when that can be read
    /// without parsing the line: its name part (before the first `;` or `:`) is ASCII with no
    /// quote. `nil` when it cannot; parse the line then. Lets an extractor skip the lines it
    /// does not want (a vCard's NOTE, N, PHOTO...) without building a ContentLine for each.
    static func property(of line: Substring, isOneOf names: [String]) -> Bool? {
        var nameStart = line.utf8.startIndex
        var end = line.utf8.startIndex
        for byte in line.utf8 {
            if byte == UInt8(ascii: ";") || byte == UInt8(ascii: ":") { break }
            if byte == UInt8(ascii: "\"") || byte >= 0x80 { return nil }
            line.utf8.formIndex(after: &end)
            if byte == UInt8(ascii: ".") { nameStart = end }
        }
        guard end < line.utf8.endIndex else { return nil }
        let name = line.utf8[nameStart..<end]
        // `& 0xDF` upper-cases an ASCII letter and maps nothing else onto one.
        return names.contains { wanted in name.elementsEqual(wanted.utf8) { $0 & 0xDF == $1 } }
    }

    /// Splits at the ASCII `separator` outside double quotes.
    static func splitUnquoted(_ text: Substring, on separator: UInt8) -> [Substring] {
        var result: [Substring] = []
        var inQuotes = false
        let bytes = text.utf8
        var start = bytes.startIndex
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                inQuotes.toggle()
            } else if byte == separator, !inQuotes {
                result.append(text[start..<index])
                start = bytes.index(after: index)
            }
            bytes.formIndex(after: &index)
        }
        result.append(text[start...])
        return result
    }

    /// The logical lines of a vCard or iCalendar text: CRLF, LF or CR line breaks (a run of
    /// them is one break); a break followed by one space or tab is a fold and is removed with
    /// that character (RFC 6350 §3.2, RFC 5545 §3.1). Empty lines are dropped. A line that was
    /// not folded is a slice of `text`, not a copy.
    public static func unfold(_ text: String) -> [Substring] {
        let bytes = text.utf8
        var lines: [Substring] = []
        // The pieces of the logical line being read (more than one only when it was folded).
        var pieces: [Substring] = []
        var start = bytes.startIndex
        var index = bytes.startIndex
        func endLine() {
            if pieces.count == 1 {
                if !pieces[0].isEmpty { lines.append(pieces[0]) }
            } else {
                let joined = pieces.joined()
                if !joined.isEmpty { lines.append(Substring(joined)) }
            }
            pieces.removeAll(keepingCapacity: true)
        }
        while index < bytes.endIndex {
            let byte = bytes[index]
            guard byte == 0x0D || byte == 0x0A else {
                bytes.formIndex(after: &index)
                continue
            }
            pieces.append(text[start..<index])
            while index < bytes.endIndex, bytes[index] == 0x0D || bytes[index] == 0x0A {
                bytes.formIndex(after: &index)
            }
            if index < bytes.endIndex, bytes[index] == 0x20 || bytes[index] == 0x09 {
                // A fold: the line goes on after the space or tab.
                bytes.formIndex(after: &index)
            } else {
                endLine()
            }
            start = index
        }
        pieces.append(text[start...])
        endLine()
        return lines
    }

    /// Undoes TEXT escaping: `\\`, `\,`, `\;`, `\n`/`\N` (newline); an unknown escape keeps the
    /// character after the backslash.
    public static func unescape<S: StringProtocol>(_ value: S) -> String {
        // On bytes: with Foundation imported, contains("\\") is NSString's range(of:).
        guard value.utf8.contains(UInt8(ascii: "\\")) else { return String(value) }
        var result = ""
        var escaping = false
        for character in value {
            if escaping {
                result.append(character == "n" || character == "N" ? "\n" : character)
                escaping = false
            } else if character == "\\" {
                escaping = true
            } else {
                result.append(character)
            }
        }
        if escaping { result.append("\\") }
        return result
    }

    /// Splits a structured value at unescaped `;` (vCard N, ORG, ADR), still escaped.
    public static func components(_ value: String) -> [Substring] {
        var result: [Substring] = []
        var escaping = false
        var start = value.startIndex
        var index = value.startIndex
        while index < value.endIndex {
            let character = value[index]
            if escaping {
                escaping = false
            } else if character == "\\" {
                escaping = true
            } else if character == ";" {
                result.append(value[start..<index])
                start = value.index(after: index)
            }
            index = value.index(after: index)
        }
        result.append(value[start...])
        return result
    }
}
