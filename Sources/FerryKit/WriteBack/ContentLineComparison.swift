/// Whether a vCard or iCalendar object a server holds is the one a client sent, as servers
/// store what they are sent: re-serialized, properties reordered and refolded (Radicale), a
/// `REV` stamped on every card (DAViCal), trailing empty components of structured values cut
/// (`N:Doe;Jane;;;` kept as `N:Doe;Jane`), group names upper-cased (`item1.EMAIL` as
/// `ITEM1.EMAIL`), `PRODID` moved or replaced and `CLASS:PUBLIC` added to events (SOGo).
///
/// A push asks this to tell its own earlier send (landed, its answer lost) from another
/// client's write, so it ignores only what carries no content of the record: what the server
/// stamps (`REV`, `PRODID`), and a default made explicit (`CLASS:PUBLIC`, RFC 5545 §3.8.1.3).
enum ContentLineComparison {
    /// Whether `stored` and `sent` hold the same content lines, whatever their order.
    static func same(_ stored: String, _ sent: String) -> Bool {
        comparable(stored) == comparable(sent)
    }

    /// The content lines that carry content, each in one form, sorted.
    static func comparable(_ text: String) -> [String] {
        ContentLineText.unfoldedLines(text).compactMap(normalized).sorted()
    }

    /// Names whose lines a server stamps or rewrites on its own.
    private static let stampedNames: Set<String> = ["REV", "PRODID"]

    /// One content line in the form compared: name and parameters upper-cased (they are
    /// case-insensitive, RFC 6350 §3.3, RFC 5545 §3.1), trailing empty components of the value
    /// cut; nil for a line that carries no content of the record.
    static func normalized(_ line: String) -> String? {
        guard let colon = separator(in: line) else { return line.isEmpty ? nil : line }
        let head = line[..<colon].uppercased()
        var value = Substring(line[line.index(after: colon)...])
        let name = head.split(separator: ";", maxSplits: 1).first.map(String.init) ?? head
        let bareName = name.split(separator: ".").last.map(String.init) ?? name
        if stampedNames.contains(bareName) { return nil }
        if bareName == "CLASS", value.uppercased() == "PUBLIC" { return nil }
        // An unescaped `;` at the end separates an empty component; `\;` is text.
        while value.hasSuffix(";"), !value.hasSuffix("\\;") { value = value.dropLast() }
        return head + ":" + value
    }

    /// The colon between a line's name (with parameters) and its value: the first one outside
    /// a quoted parameter value.
    private static func separator(in line: String) -> String.Index? {
        var quoted = false
        var index = line.startIndex
        while index < line.endIndex {
            switch line[index] {
            case "\"": quoted.toggle()
            case ":" where !quoted: return index
            default: break
            }
            index = line.index(after: index)
        }
        return nil
    }
}
