import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// The per-record parsing a first CardDAV sync runs 10,000 times was rewritten over UTF-8 bytes
/// for speed (ContentLine, WebDAVCollection.id, MultistatusHandler's trim, the fields' JSON).
/// The earlier, plainer implementations are kept here as references, and random inputs dense
/// in what each treats specially must give the same results.
@Suite struct FastPathEquivalenceTests {
    typealias Generator = WebDAVFuzzTests.Generator

    // MARK: - References (the implementations before the rewrite)

    enum Reference {
        static func unfold(_ text: String) -> [String] {
            var lines: [String] = []
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
                    if !current.isEmpty { lines.append(current) }
                    current = ""
                }
                current.unicodeScalars.append(scalar)
                index += 1
            }
            if !current.isEmpty { lines.append(current) }
            return lines
        }

        static func contentLine(_ line: Substring) -> ContentLine? {
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
            let value = String(line[line.index(after: colon)...])
            var pieces: [Substring] = []
            var start = head.startIndex
            inQuotes = false
            index = head.startIndex
            while index < head.endIndex {
                if head[index] == "\"" { inQuotes.toggle() } else if head[index] == ";", !inQuotes {
                    pieces.append(head[start..<index])
                    start = head.index(after: index)
                }
                index = head.index(after: index)
            }
            pieces.append(head[start...])
            guard let nameField = pieces.first, !nameField.isEmpty else { return nil }
            let group: String?
            let name: String
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
                parameters[key] = parameters[key].map { $0 + "," + value } ?? value
            }
            return ContentLine(group: group, name: name, parameters: parameters, value: value)
        }

        static func id(forHref href: String, in collection: WebDAVCollection) -> String? {
            var encodedPath = href
            if let schemeEnd = href.range(of: "://") {
                let afterAuthority = href[schemeEnd.upperBound...].firstIndex(of: "/") ?? href.endIndex
                encodedPath = String(href[afterAuthority...])
            }
            if let query = encodedPath.firstIndex(where: { $0 == "?" || $0 == "#" }) {
                encodedPath = String(encodedPath[..<query])
            }
            let decoded = encodedPath.removingPercentEncoding ?? encodedPath
            if decoded.isEmpty { return nil }
            if decoded.hasPrefix(collection.path) {
                let relative = String(decoded.dropFirst(collection.path.count))
                return relative.isEmpty ? nil : relative
            }
            if decoded + "/" == collection.path { return nil }
            return decoded
        }

        static func encodeFields(_ fields: [String: String]) -> String {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            return String(decoding: try! encoder.encode(fields), as: UTF8.self)
        }
    }

    // MARK: - Inputs

    static func text(_ random: inout Generator, from pieces: [String], length: ClosedRange<Int> = 0...30) -> String {
        (0..<Int.random(in: length, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined()
    }

    static let cardPieces = ["\r\n", "\n", "\r", " ", "\t", ":", ";", "=", "\"", ".", ",", "\\", "\\n", "a", "Z", "é", "€", "😀",
                             "EMAIL", "item1.", "TYPE=work", "BEGIN:VCARD", "END:VCARD", "\u{301}", "\u{2028}", "\u{00A0}",
                             "\nfn:", "\nTel;", "\nuid:", "\nSUMMARY:", "\nDtStart;TZID=x:", "\nemaıl:"]

    // MARK: - Tests

    @Test func unfoldAndContentLinesMatchTheReference() {
        var random = Generator(state: WebDAVFuzzTests.seed ^ 0xF01D)
        for _ in 0..<5_000 {
            let text = Self.text(&random, from: Self.cardPieces, length: 0...40)
            let lines = ContentLine.unfold(text)
            #expect(lines.map(String.init) == Reference.unfold(text), "\(text.debugDescription)")
            // The reference walked Characters, so a delimiter carrying a combining mark
            // (":\u{301}") was not a delimiter to it; see combiningMarksDoNotHideDelimiters.
            for line in lines where !Self.hasMarkedDelimiter(line) {
                #expect(ContentLine(line) == Reference.contentLine(line), "\(line.debugDescription)")
            }
            // The extractors skip lines by this answer: when it answers for a line that parses,
            // it must say what the parse would.
            for line in lines {
                for names in [CardFieldExtractor.vCardNames, CardFieldExtractor.iCalendarNames] {
                    guard let quick = ContentLine.property(of: line, isOneOf: names), let parsed = ContentLine(line) else { continue }
                    #expect(quick == names.contains(parsed.name), "\(line.debugDescription)")
                }
            }
        }
    }

    static func hasMarkedDelimiter(_ line: Substring) -> Bool {
        line.contains { character in
            character.unicodeScalars.count > 1 && [":", ";", "=", ".", "\""].contains(character.unicodeScalars.first!)
        }
    }

    /// The property grammar's delimiters are ASCII code points (RFC 6350 §3.3): a combining
    /// mark after one does not make it part of a name or value.
    @Test func combiningMarksDoNotHideDelimiters() throws {
        let note = try #require(ContentLine("NOTE:\u{301}x"))
        #expect(note.name == "NOTE" && note.value == "\u{301}x")
        let email = try #require(ContentLine("item1.\u{301}EMAIL;TYPE=\u{301}w:a@b"))
        #expect(email.group == "ITEM1" && email.name == "\u{301}EMAIL" && email.parameters == ["TYPE": "\u{301}w"])
    }

    @Test func hrefsMapToTheReferenceIDs() throws {
        var random = Generator(state: WebDAVFuzzTests.seed ^ 0x1D5)
        let collection = try #require(WebDAVCollection(url: "https://dav.example/dav/a%20book/"))
        let pieces = ["/", "dav", "a%20book", "a book", "%", "%2", "%20", "%2F", "%C3%A9", "%FF", "%zz", "?", "#", "://", ":", "//", "https",
                      "card", ".vcf", "é", "x", "=", "&"]
        for _ in 0..<5_000 {
            let href = Self.text(&random, from: pieces, length: 0...8)
            #expect(collection.id(forHref: href) == Reference.id(forHref: href, in: collection), "\(href.debugDescription)")
        }
        #expect(collection.id(forHref: "https://dav.example/dav/a%20book/b%C3%A9.vcf?x=1") == "bé.vcf")
        #expect(collection.id(forHref: "/dav/a%20book/") == nil)
    }

    @Test func whitespaceIsFoundationsSetOverTheWholeBMP() {
        var differing: [String] = []
        for value in UInt32(0)...0xFFFF {
            guard let scalar = Unicode.Scalar(value) else { continue }
            if MultistatusHandler.isWhitespaceOrNewline(scalar) != CharacterSet.whitespacesAndNewlines.contains(scalar) {
                differing.append(String(value, radix: 16))
            }
        }
        #expect(differing.isEmpty, "differ from Foundation at U+\(differing)")
    }

    @Test func trimmingMatchesFoundation() {
        var random = Generator(state: WebDAVFuzzTests.seed ^ 0x7219)
        let pieces = [" ", "\t", "\n", "\r", "\u{85}", "\u{A0}", "\u{2028}", "\u{3000}", "\u{200B}", "\u{301}", "a", "é", "\"etag\"", "😀"]
        for _ in 0..<5_000 {
            let text = Self.text(&random, from: pieces, length: 0...12)
            #expect(MultistatusHandler.trimmingWhitespace(text) == text.trimmingCharacters(in: .whitespacesAndNewlines), "\(text.debugDescription)")
        }
    }

    @Test func fieldsJSONMatchesJSONEncoder() {
        var random = Generator(state: WebDAVFuzzTests.seed ^ 0x150)
        let pieces = ["\u{0}", "\u{1}", "\u{8}", "\u{9}", "\n", "\u{B}", "\u{C}", "\r", "\u{1F}", "\u{7F}", "\"", "\\", "/", "a", "é", "\u{2028}", "😀", " "]
        let keys = ["UID", "FN", "EMAIL", "TEL", "ORG", "DTSTART", "DTSTART_TZID", "SUMMARY", "RRULE"]
        for _ in 0..<3_000 {
            var fields: [String: String] = [:]
            for key in keys where Bool.random(using: &random) {
                fields[key] = Self.text(&random, from: pieces, length: 0...10)
            }
            #expect(ReplicaDatabase.encodeFields(fields) == Reference.encodeFields(fields), "\(fields)")
        }
        #expect(ReplicaDatabase.encodeFields(nil) == nil)
    }
}
