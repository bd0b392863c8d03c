import FerryKit
import FerryTestSupport
import Foundation
import Testing

/// Inputs found by the libFuzzer targets (Sources/ferry-fuzz, scripts/fuzz.sh), kept as plain
/// swift-testing tests so they run in every test pass without a sanitizer build.
@Suite struct FuzzRegressionTests {
    static let file = "/etc/ferry/test.conf"
    static let environment = ["STATE_DIRECTORY": "/var/lib/ferry", "RUNTIME_DIRECTORY": "/run/ferry"]

    /// The seed corpus of the config fuzz target (Tests/Fuzz/corpus/config).
    static let configCorpus = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz/corpus/config")

    private func outcome(_ text: String) -> Result<FerryConfiguration, ConfigurationErrors> {
        Result { () throws(ConfigurationErrors) in
            try ConfigurationLoader.parse(text: text, file: Self.file, environment: Self.environment)
        }
    }

    /// Found by `FUZZ_TARGET=config` (CRLF invariant) within seconds: ConfigurationSyntax split the
    /// text on the Character "\n", and in a Swift String "\r\n" is a single Character, so a file
    /// saved with CRLF line endings was one long line ("section header must end with ']'").
    @Test func crlfLineEndings_parseLikeLF() throws {
        let lf = "[ferry]\nlog-level = debug\n\n[store quotes]\nkind = json\nurl = https://example.com/q.json\ninterval = 30s\n"
        let crlf = lf.replacingOccurrences(of: "\n", with: "\r\n")
        let expected = try outcome(lf).get()
        let configuration = try outcome(crlf).get()
        #expect(configuration == expected)
        #expect(configuration.stores.map(\.name) == ["quotes"])
        #expect(configuration.global.logLevel == .debug)
    }

    /// The same bug seen from the problem list: every problem keeps its line number.
    @Test func crlfLineEndings_keepProblemLines() {
        let lf = "[ferry]\nmax-concurrent-passes = 100\n[store Bad-Name]\nkind = json\nstray line\n"
        let crlf = lf.replacingOccurrences(of: "\n", with: "\r\n")
        guard case .failure(let expected) = outcome(lf), case .failure(let found) = outcome(crlf) else {
            Issue.record("both texts must be refused")
            return
        }
        #expect(found == expected)
        #expect(found.problems.map(\.line) == [2, 3, 5])
    }

    /// Every seed of the config fuzz target gives the same outcome with CRLF as with LF, and its
    /// problems point at lines that exist.
    @Test func configCorpus_lineEndingsDoNotMatter() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.configCorpus.path).sorted()
        try #require(!names.isEmpty, "no seed corpus at \(Self.configCorpus.path)")
        for name in names {
            let text = try String(contentsOf: Self.configCorpus.appendingPathComponent(name), encoding: .utf8)
            let lines = text.utf8.filter { $0 == UInt8(ascii: "\n") }.count + 1
            let lf = outcome(text)
            let crlf = outcome(text.replacingOccurrences(of: "\n", with: "\r\n"))
            #expect(lf == crlf, "\(name)")
            if case .failure(let errors) = lf {
                #expect(errors.problems.allSatisfy { (1...lines).contains($0.line) }, "\(name): \(errors)")
            }
        }
    }

    /// Found by `FUZZ_TARGET=config` in CI: its earlier invariant ("the problem's text does not
    /// contain the inline secret") fired on `rest-api-key = credent`, because the refusal's own
    /// advice says "write credential:NAME". Ferry was right and the check was wrong; the fuzz
    /// target now checks that the text does not depend on the value, and so does this test.
    /// Input: Tests/Fuzz/regressions/config-secret-inside-the-advice.conf.
    @Test func inlineSecretRefusal_doesNotDependOnTheSecret() {
        func refusal(_ secret: String) -> [String] {
            let text = "[store players]\nkind = parse\nurl = http://127.0.0.1:1337/parse/classes/Player\napplication-id = quotes\nrest-api-key = \(secret)\n"
            guard case .failure(let errors) = outcome(text) else {
                Issue.record("an inline secret must be refused")
                return []
            }
            return errors.problems.filter { $0.line == 5 }.map(\.description)
        }
        let realistic = refusal("k3y-9f2a71c0d4e8")
        #expect(!realistic.isEmpty)
        #expect(realistic.allSatisfy { !$0.contains("k3y-9f2a71c0d4e8") })
        #expect(refusal("credent") == realistic)
        #expect(refusal("xxxxxxx") == realistic)
    }
}
