import Foundation

/// The INI-style syntax of a Ferry configuration file, before any meaning is given to it.
///
/// Chosen because it is what systemd units and most Unix daemons use: people edit it by hand,
/// comment lines out, and diff it, with no quoting rules to learn. The grammar, one item per line:
///
///     # a comment (also `;`), only on a line of its own: values may contain '#' (URLs)
///     [ferry]                 the global section
///     [store NAME]            one section per store
///     key = value             surrounding spaces are trimmed; the value may be empty
struct ConfigurationSyntax {
    struct Entry {
        var key: String
        var value: String
        var line: Int
    }

    struct Section {
        enum Kind: Equatable {
            case global
            case store(name: String)
        }

        var kind: Kind
        var line: Int
        var entries: [Entry] = []
    }

    var sections: [Section] = []
    var problems: [ConfigurationProblem] = []

    /// Trimmed from both ends of every line. Built once: a CharacterSet union allocates and fills
    /// bitmaps, and building it per line was most of the parse time (profiled under ferry-fuzz).
    private static let blanks = CharacterSet.whitespaces.union(CharacterSet(charactersIn: "\r"))

    /// Splits `text` into sections and entries; syntax errors become problems and the line is skipped.
    init(text: String, file: String) {
        // nil while outside any section, or inside an unknown one (whose lines are then ignored:
        // the header already produced a problem).
        var current: Int?
        var inUnknownSection = false
        var lineNumber = 0
        // Split on the byte, not the Character: in a Swift String "\r\n" is ONE Character, so
        // splitting on "\n" left a CRLF file as a single line (found by ferry-fuzz, target config).
        // Splitting valid UTF-8 at an ASCII byte keeps every piece valid.
        for rawLine in text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            lineNumber += 1
            let line = String(decoding: rawLine, as: UTF8.self).trimmingCharacters(in: Self.blanks)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") {
                continue
            }
            if line.hasPrefix("[") {
                current = nil
                inUnknownSection = true
                guard line.hasSuffix("]") else {
                    problems.append(.init(file: file, line: lineNumber, message: "section header must end with ']'"))
                    continue
                }
                let words = line.dropFirst().dropLast().split(separator: " ", omittingEmptySubsequences: true)
                if words == ["ferry"] {
                    sections.append(Section(kind: .global, line: lineNumber))
                } else if words.count == 2, words[0] == "store" {
                    sections.append(Section(kind: .store(name: String(words[1])), line: lineNumber))
                } else if words.first == "store" {
                    let message = words.count > 2
                        ? "store name '\(words.dropFirst().joined(separator: " "))' has spaces: a store name is one word of lowercase letters, digits and '_' (it names the table), as in [store \(words.dropFirst().joined(separator: "_").lowercased())]"
                        : "a store section is written [store NAME]"
                    problems.append(.init(file: file, line: lineNumber, message: message))
                    continue
                } else {
                    problems.append(.init(file: file, line: lineNumber,
                                          message: "unknown section '\(line)' (expected [ferry] or [store NAME])"))
                    continue
                }
                current = sections.count - 1
                inUnknownSection = false
                continue
            }
            guard let equals = line.firstIndex(of: "=") else {
                problems.append(.init(file: file, line: lineNumber, message: "expected 'key = value', a [section] or a # comment"))
                continue
            }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            guard !key.isEmpty else {
                problems.append(.init(file: file, line: lineNumber, message: "missing key before '='"))
                continue
            }
            guard let current else {
                if !inUnknownSection {
                    problems.append(.init(file: file, line: lineNumber, key: key,
                                          message: "key outside any section (start the file with [ferry] or [store NAME])"))
                }
                continue
            }
            sections[current].entries.append(Entry(key: key, value: value, line: lineNumber))
        }
    }
}
