import Foundation

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
