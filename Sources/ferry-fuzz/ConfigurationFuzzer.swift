import FerryKit
import Foundation

/// Fuzzes ConfigurationLoader.parse, which reads ferry.conf (operator-written, but also what
/// `ferry check-config` is pointed at).
///
/// Invariants, beyond "never traps":
/// - the parse returns a configuration or throws a non-empty list of problems, each naming the
///   file and a line within the input (1...number of lines), in line order;
/// - a configuration's stores have distinct, non-empty names;
/// - line endings do not matter: the same text with CRLF line endings gives the same stores or
///   the same problems (Windows-edited files are common);
/// - the problems about a line holding an inline secret read the same whatever the secret is
///   (the value is never echoed; see checkSecretsStayOut).
///
/// The environment is empty (no `CREDENTIALS_DIRECTORY`, no state directories) so the outcome
/// depends on the input only; the file lives in a directory that does not exist, so relative
/// `file:` secret references resolve to nothing.
enum ConfigurationFuzzer {
    static let file = "/nonexistent/ferry-fuzz/ferry.conf"
    static let secretKeys = Set(StoreKind.registered.flatMap(\.secretKeys))

    /// A parse's outcome in comparable form: store names, or (line, key, message) per problem.
    enum Outcome: Equatable {
        case stores([String])
        case problems([String])
    }

    static func run(_ data: Data) {
        // load() refuses non-UTF-8 files before parsing; decoding leniently still fuzzes parse.
        let text = String(decoding: data, as: UTF8.self)
        let lineCount = text.utf8.reduce(1) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 }
        let outcome = check(text, lineCount: lineCount)

        let crlf = text.replacingOccurrences(of: "\n", with: "\r\n")
        if crlf != text {
            let crlfOutcome = check(crlf, lineCount: lineCount)
            FuzzCheck.expect(crlfOutcome == outcome, "CRLF line endings change the outcome: \(outcome) vs \(crlfOutcome)")
        }
    }

    private static func check(_ text: String, lineCount: Int) -> Outcome {
        do {
            let configuration = try ConfigurationLoader.parse(text: text, file: file, environment: [:])
            let names = configuration.stores.map(\.name)
            FuzzCheck.expect(Set(names).count == names.count, "duplicate store names \(names)")
            FuzzCheck.expect(!names.contains(""), "a store with an empty name")
            return .stores(names)
        } catch {
            let problems = error.problems
            FuzzCheck.expect(!problems.isEmpty, "ConfigurationErrors with no problems")
            var previousLine = 0
            for problem in problems {
                FuzzCheck.expect(problem.file == file, "problem names file '\(problem.file)'")
                FuzzCheck.expect((1...lineCount).contains(problem.line), "problem on line \(problem.line) of a \(lineCount)-line input: \(problem)")
                FuzzCheck.expect(problem.line >= previousLine, "problems out of line order: \(problem)")
                previousLine = problem.line
            }
            checkSecretsStayOut(text, problems)
            return .problems(problems.map { "\($0.line) \($0.key ?? "-") \($0.message)" })
        }
    }

    /// Inline secret values (not `credential:` / `file:` references) must not be echoed.
    ///
    /// "The problem's text contains the value" is not the property: a value such as `credent`
    /// is a substring of the refusal's own advice ("write credential:NAME"). What must hold is
    /// that the text does not depend on the value, so when the value does appear, the same
    /// input is parsed again with that value replaced, and that line's problems must read the
    /// same.
    private static func checkSecretsStayOut(_ text: String, _ problems: [ConfigurationProblem]) {
        // Split on the byte: as a String, "\r\n" is one Character and would not split on "\n".
        let lines = text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        for (index, line) in lines.enumerated() {
            guard let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespacesAndNewlines)
            guard secretKeys.contains(key), value.count >= 4,
                  !value.hasPrefix("credential:"), !value.hasPrefix("file:") else { continue }
            let onLine = problems.filter { $0.line == index + 1 }.map(\.description)
            guard onLine.contains(where: { $0.contains(value) }) else { continue }

            // Every character changed, so no part of the value survives; still an inline value.
            let standIn = String(value.map { $0 == "x" ? "y" : "x" })
            var edited = lines
            edited[index] = String(line[...equals]) + " " + standIn
            let again = reparsedProblems(edited.joined(separator: "\n")).filter { $0.line == index + 1 }.map(\.description)
            FuzzCheck.expect(again == onLine, "secret value echoed: \(onLine) becomes \(again) when only the secret changes")
        }
    }

    private static func reparsedProblems(_ text: String) -> [ConfigurationProblem] {
        do {
            _ = try ConfigurationLoader.parse(text: text, file: file, environment: [:])
            return []
        } catch {
            return error.problems
        }
    }
}
