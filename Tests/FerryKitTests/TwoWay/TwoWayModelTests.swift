import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// Two-way sync against the reference model, on every server that takes local writes: random
/// rounds of local and remote writes with lost answers, killed pushes and two pushers at once
/// (``TwoWayDriver``), under every conflict policy. A failure prints its seed and the shortest
/// failing sequence the shrinker found; `FERRY_TWO_WAY_SEED=N` replays one seed. Each server
/// and policy runs rounds for `FERRY_TWO_WAY_SECONDS` (10 by default; CI gives more), or exactly
/// `FERRY_TWO_WAY_ROUNDS=N` rounds; `FERRY_TWO_WAY_SERVERS=davical,parse` runs on those servers
/// only. Cases run side by side (each has its own server, proxy and replica), as many as the
/// test runner's threads, which is also what a real machine does to the timing.
@Suite("Two-way sync against the reference model")
struct TwoWayModelTests {
    enum Server: String, CaseIterable, CustomTestStringConvertible {
        case parse, json
        case jsonDigest = "json-digest"
        case radicale, xandikos, davical, sabredav, sogo
        var testDescription: String { rawValue }

        var dav: DAVServer.Kind? { DAVServer.Kind(rawValue: rawValue) }

        /// Installed here, or in CI (where a missing server fails).
        var shouldRun: Bool { dav?.shouldRun ?? true }

        /// The servers installed here, or those `FERRY_TWO_WAY_SERVERS` names (comma-separated).
        static var selected: [Server] {
            let named = ProcessInfo.processInfo.environment["FERRY_TWO_WAY_SERVERS"]?.split(separator: ",").map(String.init)
            return allCases.filter { server in server.shouldRun && (named?.contains(server.rawValue) ?? true) }
        }

        func start() throws -> any TwoWayRemote {
            switch self {
            case .parse: try ParseTwoWayRemote()
            case .json: try JSONTwoWayRemote()
            case .jsonDigest: try JSONTwoWayRemote(digestVersions: true)
            case .radicale, .xandikos, .davical, .sabredav, .sogo: try DAVTwoWayRemote(dav!)
            }
        }
    }

    /// A fixed number of rounds (replaying a run), or nil: rounds until ``seconds`` have passed.
    static var rounds: Int? { ProcessInfo.processInfo.environment["FERRY_TWO_WAY_ROUNDS"].flatMap { Int($0) } }
    static var seconds: Int { ProcessInfo.processInfo.environment["FERRY_TWO_WAY_SECONDS"].flatMap { Int($0) } ?? 10 }
    static var seed: UInt64? { ProcessInfo.processInfo.environment["FERRY_TWO_WAY_SEED"].flatMap { UInt64($0) } }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: TwoWayDriver.ferry), "ferry not built (swift build)"),
          arguments: Server.selected, ConflictPolicy.allCases)
    func randomRoundsMatchTheModel(_ server: Server, _ policy: ConflictPolicy) throws {
        let seed = Self.seed ?? UInt64.random(in: 1...999_999)
        let remote = try server.start()
        defer { remote.stop() }
        // Rounds are generated one after another from the seed, so a run cut short by time is
        // a prefix of a longer one: a seed replays whatever the budget was.
        let steps = TwoWayDriver.steps(rounds: Self.rounds ?? 2_000, seed: seed, collides: remote.collides)
        let driver = try TwoWayDriver(remote: remote, policy: policy)
        do {
            defer { driver.close() }
            try driver.run(steps, until: Self.rounds == nil ? ContinuousClock.now + .seconds(Self.seconds) : nil)
            print("two-way model, seed \(seed): \(driver.figures)")
        } catch let failure as TwoWayDriver.Failure {
            let shortest = try Self.shrink(steps, failingAt: failure.step, server: server, policy: policy)
            Issue.record("""
                \(server) \(policy), seed \(seed) (FERRY_TWO_WAY_SEED=\(seed)): \(failure)
                shortest failing sequence found (\(shortest.steps.count) steps): \(shortest.failure)
                \(shortest.steps.enumerated().map { "  \($0.offset + 1). \($0.element)" }.joined(separator: "\n"))
                """)
        }
    }

    /// The shortest sequence found that still fails: first the prefix up to the failure, then
    /// each step removed in turn (replayed on a fresh server each time), within a budget of
    /// 30 replays and two minutes.
    static func shrink(_ steps: [TwoWayDriver.Step], failingAt index: Int, server: Server, policy: ConflictPolicy) throws
        -> (steps: [TwoWayDriver.Step], failure: String) {
        var best = Array(steps.prefix(index + 1))
        var failure = "as first found"
        var budget = 30
        let deadline = ContinuousClock.now + .seconds(120)
        func fails(_ candidate: [TwoWayDriver.Step]) -> String? {
            budget -= 1
            if ContinuousClock.now > deadline { budget = 0 }
            guard let remote = try? server.start() else { return nil }
            defer { remote.stop() }
            guard let driver = try? TwoWayDriver(remote: remote, policy: policy) else { return nil }
            defer { driver.close() }
            do { try driver.run(candidate) } catch { return "\(error)" }
            return nil
        }
        var position = 0
        while position < best.count, budget > 0 {
            // The last step is the check that failed: keep it.
            if position == best.count - 1 { break }
            var candidate = best
            candidate.remove(at: position)
            if let words = fails(candidate) {
                best = candidate
                failure = words
            } else {
                position += 1
            }
        }
        return (best, failure)
    }

    /// The model itself, row by row, as its doc reads.
    @Test func theModelSettlesAsItsTableSays() {
        typealias Row = (local: TwoWayModel.Local?, other: TwoWayModel.Other?, policy: ConflictPolicy, choice: ConflictPlan.Resolution?,
                         records: [String], conflict: Bool)
        let rows: [Row] = [
            (.update("L"), nil, .hold, nil, ["L"], false),
            (nil, .update("R"), .hold, nil, ["R"], false),
            (.update("L"), .update("R"), .remoteWins, nil, ["R"], true),
            (.update("L"), .update("R"), .localWins, nil, ["L"], true),
            (.update("L"), .update("R"), .keepBoth, nil, ["L", "R"], true),
            (.update("L"), .update("R"), .hold, .rebaseLocal, ["L"], true),
            (.delete, .update("R"), .keepBoth, nil, ["R"], true),
            (.delete, .delete, .localWins, nil, [], false),
            (.update("L"), .delete, .remoteWins, nil, [], true),
            (.update("L"), .delete, .localWins, nil, ["L"], true),
            (.update("L"), .delete, .keepBoth, nil, ["L"], true),
            (.create("L"), .create("R"), .keepBoth, nil, ["L", "R"], true),
            (.create("L"), .create("R"), .hold, .takeRemote, ["R"], true),
        ]
        for row in rows {
            let outcome = TwoWayModel.settle(start: ["k": ["S"]], local: row.local.map { ["k": $0] } ?? [:], other: row.other.map { ["k": $0] } ?? [:],
                                             policy: row.policy, chosen: row.choice.map { ["k": $0] } ?? [:])
            #expect((outcome.records["k"] ?? []) == row.records, "\(String(describing: row.local)) / \(String(describing: row.other)) under \(row.policy)")
            #expect(outcome.conflicts == (row.conflict ? ["k"] : []), "\(String(describing: row.local)) / \(String(describing: row.other)) under \(row.policy)")
        }
        #expect(TwoWayModel.Local.create("a").then(.delete) == nil, "a create deleted before it was pushed is nothing")
        #expect(TwoWayModel.Local.update("a").then(.delete) == .delete)
    }
}
