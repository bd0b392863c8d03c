import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// The seeds CI replays (`Tests/TwoWay/seeds.txt`): every seed the two-way model driver
/// ever failed on, kept as found, and a fixed set on every server and policy. Each replays a
/// fixed number of rounds, so a run passes or fails on the code, never on the draw; fresh
/// seeds are for exploring (`scripts/explore-two-way.sh`), and a seed that fails there is
/// added here with the line its failure prints.
///
/// A line is `server policy seed rounds [generator]` (``TwoWayDriver/Generator``, `ordered`
/// when left out: the seeds found before writes could interleave), then optionally `# why`;
/// blank lines and lines that start with `#` say nothing.
struct TwoWaySeedCorpus {
    struct Entry: Sendable, Equatable, CustomTestStringConvertible {
        var server: TwoWayModelTests.Server
        var policy: ConflictPolicy
        var seed: UInt64
        var rounds: Int
        var generator: TwoWayDriver.Generator = .ordered
        /// The line's number in the file.
        var line: Int

        var testDescription: String { "\(server.rawValue) \(policy.rawValue) seed \(seed), \(rounds) \(generator.rawValue) rounds" }
        /// The line that replays this run.
        var corpusLine: String { "\(server.rawValue) \(policy.rawValue) \(seed) \(rounds) \(generator.rawValue)" }
    }

    /// A line that does not read, with its number and what is wrong.
    struct Malformed: Error, Equatable, CustomStringConvertible {
        var line: Int
        var text: String
        var problem: String
        var description: String { "\(TwoWaySeedCorpus.path):\(line): \(problem): \(text)" }
    }

    static let path = TestServer.repositoryRoot.appendingPathComponent("Tests/TwoWay/seeds.txt").path

    static func parse(_ text: String) throws(Malformed) -> [Entry] {
        var entries: [Entry] = []
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let content = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let words = content.split(whereSeparator: \.isWhitespace).map(String.init)
            guard !words.isEmpty else { continue }
            let number = index + 1
            func malformed(_ problem: String) -> Malformed { Malformed(line: number, text: String(raw), problem: problem) }
            guard words.count == 4 || words.count == 5 else { throw malformed("expected `server policy seed rounds [generator]`") }
            guard let server = TwoWayModelTests.Server(rawValue: words[0]) else {
                throw malformed("no server \(words[0]) (\(TwoWayModelTests.Server.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            guard let policy = ConflictPolicy(rawValue: words[1]) else {
                throw malformed("no policy \(words[1]) (\(ConflictPolicy.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            guard let seed = UInt64(words[2]) else { throw malformed("the seed is not a number") }
            guard let rounds = Int(words[3]), rounds > 0 else { throw malformed("the rounds are not a positive number") }
            let generator = words.count == 5 ? TwoWayDriver.Generator(rawValue: words[4]) : .ordered
            guard let generator else {
                throw malformed("no generator \(words[4]) (\(TwoWayDriver.Generator.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            entries.append(Entry(server: server, policy: policy, seed: seed, rounds: rounds, generator: generator, line: number))
        }
        return entries
    }

    /// The file's entries; a file that does not read gives none here, and
    /// ``TwoWayModelTests/theSeedCorpusReads()`` fails with the reason.
    static func load() throws -> [Entry] {
        try parse(String(contentsOfFile: path, encoding: .utf8))
    }

    static var entries: [Entry] { (try? load()) ?? [] }
}
