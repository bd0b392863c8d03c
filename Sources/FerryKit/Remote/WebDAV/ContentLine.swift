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
        // The value starts at the first ':' outside a quoted parameter value.
        var inQuotes = false
        var colon: Substring.Index?
        var index = line.startIndex
        while index < line.endIndex {
            let character = line[index]
            if character == "\"" {
                inQuotes.toggle()
            } else if character == ":", !inQuotes {
                colon = index
                break
            }
            index = line.index(after: index)
        }
        guard let colon else { return nil }
        let head = line[..<colon]
        value = String(line[line.index(after: colon)...])

        let pieces = Self.splitUnquoted(head, on: ";")
        guard let nameField = pieces.first, !nameField.isEmpty else { return nil }
        if let dot = nameField.lastIndex(of: ".") {
            group = String(nameField[..<dot]).uppercased()
            name = String(nameField[nameField.index(after: dot)...]).uppercased()
        } else {
            group = nil
            name = String(nameField).uppercased()
        }
        guard !name.isEmpty else { return nil }
        var parameters: [String: String] = [:]
        for piece in pieces.dropFirst() {
            let parts = piece.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = String(parts[0]).uppercased()
            var value = parts.count > 1 ? String(parts[1]) : ""
            value.removeAll { $0 == "\"" }
            // A repeated parameter (TYPE=work;TYPE=voice) accumulates.
            if let existing = parameters[key] {
                parameters[key] = existing + "," + value
            } else {
                parameters[key] = value
            }
        }
        self.parameters = parameters
    }

    /// Splits at `separator` outside double quotes.
    static func splitUnquoted(_ text: Substring, on separator: Character) -> [Substring] {
        var result: [Substring] = []
        var inQuotes = false
        var start = text.startIndex
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            if character == "\"" {
                inQuotes.toggle()
            } else if character == separator, !inQuotes {
                result.append(text[start..<index])
                start = text.index(after: index)
            }
            index = text.index(after: index)
        }
        result.append(text[start...])
        return result
    }

    /// The logical lines of a vCard or iCalendar text: CRLF, LF or CR line breaks; a break
    /// followed by one space or tab is a fold and is removed with that character
    /// (RFC 6350 §3.2, RFC 5545 §3.1). Empty lines are dropped.
    public static func unfold(_ text: String) -> [Substring] {
        // Work on unicode scalars so "\r\n" is two separate characters to look at.
        var lines: [Substring] = []
        var current = ""
        let scalars = Array(text.unicodeScalars)
        var index = 0
        var pendingBreak = false
        while index < scalars.count {
            let scalar = scalars[index]
            if scalar == "\r" || scalar == "\n" {
                if scalar == "\r", index + 1 < scalars.count, scalars[index + 1] == "\n" { index += 1 }
                pendingBreak = true
                index += 1
                continue
            }
            if pendingBreak {
                pendingBreak = false
                if scalar == " " || scalar == "\t" {
                    index += 1
                    continue
                }
                if !current.isEmpty { lines.append(Substring(current)) }
                current = ""
            }
            current.unicodeScalars.append(scalar)
            index += 1
        }
        if !current.isEmpty { lines.append(Substring(current)) }
        return lines
    }

    /// Undoes TEXT escaping: `\\`, `\,`, `\;`, `\n`/`\N` (newline); an unknown escape keeps the
    /// character after the backslash.
    public static func unescape<S: StringProtocol>(_ value: S) -> String {
        guard value.contains("\\") else { return String(value) }
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
