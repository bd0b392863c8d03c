import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// Two-way sync against the reference model, on every server that takes local writes: rounds
/// of local and remote writes with lost answers, killed pushes and two pushers at once
/// (``TwoWayDriver``), under every conflict policy.
///
/// CI replays the seed corpus (``TwoWaySeedCorpus``, `Tests/TwoWay/seeds.txt`): every seed that ever failed
/// and a fixed set, each for its rounds, so it passes or fails on the code. Exploring draws
/// fresh seeds instead (`FERRY_TWO_WAY_EXPLORE=1`, as `scripts/explore-two-way.sh` runs it):
/// each server and policy runs rounds for `FERRY_TWO_WAY_SECONDS` (10 by default), or exactly
/// `FERRY_TWO_WAY_ROUNDS=N` rounds; `FERRY_TWO_WAY_SEED=N` replays one seed on every server
/// and policy. `FERRY_TWO_WAY_SERVERS=davical,parse` and `FERRY_TWO_WAY_POLICIES=keep-both`
/// narrow either; `FERRY_TWO_WAY_TRACE=1` prints every step and pass. A failure prints its
/// seed, its corpus line and the shortest failing sequence the shrinker found. Cases run side
/// by side (each has its own server, proxy and replica), as many as the test runner's
/// threads, which is also what a real machine does to the timing.
@Suite("Two-way sync against the reference model")
struct TwoWayModelTests {
    enum Server: String, CaseIterable, Sendable, CustomTestStringConvertible {
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

    static var environment: [String: String] { ProcessInfo.processInfo.environment }
    /// A fixed number of rounds (replaying a run), or nil: rounds until ``seconds`` have passed.
    static var rounds: Int? { environment["FERRY_TWO_WAY_ROUNDS"].flatMap { Int($0) } }
    static var seconds: Int { environment["FERRY_TWO_WAY_SECONDS"].flatMap { Int($0) } ?? 10 }
    static var seed: UInt64? { environment["FERRY_TWO_WAY_SEED"].flatMap { UInt64($0) } }
    /// How exploring draws steps: `FERRY_TWO_WAY_GENERATOR` (`interleaved` by default: any write
    /// at any time; `ordered`: the rounds the corpus's first seeds were found with).
    static var generator: TwoWayDriver.Generator { environment["FERRY_TWO_WAY_GENERATOR"].flatMap(TwoWayDriver.Generator.init) ?? .interleaved }
    /// Fresh seeds (or the one `FERRY_TWO_WAY_SEED` names) rather than the corpus.
    static var exploring: Bool { environment["FERRY_TWO_WAY_EXPLORE"] == "1" || seed != nil }
    static var ferryBuilt: Bool { FileManager.default.isExecutableFile(atPath: TwoWayDriver.ferry) }

    /// The policies `FERRY_TWO_WAY_POLICIES` names (comma-separated), or all.
    static var selectedPolicies: [ConflictPolicy] {
        let named = environment["FERRY_TWO_WAY_POLICIES"]?.split(separator: ",").map(String.init)
        return ConflictPolicy.allCases.filter { named?.contains($0.rawValue) ?? true }
    }

    /// The corpus's runs on the selected servers and policies.
    static var corpus: [TwoWaySeedCorpus.Entry] {
        TwoWaySeedCorpus.entries.filter { Server.selected.contains($0.server) && selectedPolicies.contains($0.policy) }
    }

    @Test(.enabled(if: ferryBuilt, "ferry not built (swift build)"), .enabled(if: !exploring, "exploring fresh seeds"),
          arguments: corpus)
    func theSeedCorpusMatchesTheModel(_ entry: TwoWaySeedCorpus.Entry) throws {
        try Self.run(entry.server, entry.policy, seed: entry.seed, rounds: entry.rounds, generator: entry.generator, until: nil)
    }

    @Test func theSeedCorpusReads() throws {
        let entries = try TwoWaySeedCorpus.load()
        // Every server and policy has runs of its own, beside the seeds that once failed.
        for server in Server.allCases {
            for policy in ConflictPolicy.allCases {
                #expect(entries.contains { $0.server == server && $0.policy == policy }, "no run of \(server.rawValue) \(policy.rawValue)")
            }
        }
        #expect(throws: TwoWaySeedCorpus.Malformed.self) { try TwoWaySeedCorpus.parse("json keep-both 12\n") }
        #expect(throws: TwoWaySeedCorpus.Malformed.self) { try TwoWaySeedCorpus.parse("# fine\njson keep-all 12 3\n") }
        #expect(try TwoWaySeedCorpus.parse("# a comment\n\njson-digest keep-both 453972 61 # a keep-both copy made twice\n")
                == [.init(server: .jsonDigest, policy: .keepBoth, seed: 453_972, rounds: 61, line: 3)])
        #expect(try TwoWaySeedCorpus.parse("json hold 5 3 interleaved").first?.generator == .interleaved)
        #expect(throws: TwoWaySeedCorpus.Malformed.self) { try TwoWaySeedCorpus.parse("json hold 5 3 shuffled\n") }
    }

    @Test(.enabled(if: ferryBuilt, "ferry not built (swift build)"), .enabled(if: exploring, "replaying the seed corpus"),
          arguments: Server.selected, selectedPolicies)
    func freshSeedsMatchTheModel(_ server: Server, _ policy: ConflictPolicy) throws {
        let seed = Self.seed ?? UInt64.random(in: 1...999_999)
        try Self.run(server, policy, seed: seed, rounds: Self.rounds, generator: Self.generator,
                     until: Self.rounds == nil ? ContinuousClock.now + .seconds(Self.seconds) : nil)
    }

    /// Runs `rounds` rounds from `seed` (or rounds until `deadline`), prints what the run did on
    /// one line (`two-way run:` and its figures, for the exploring script to add up), and on a
    /// failure records the seed, its corpus line and the shortest failing sequence.
    static func run(_ server: Server, _ policy: ConflictPolicy, seed: UInt64, rounds: Int?, generator: TwoWayDriver.Generator,
                    until deadline: ContinuousClock.Instant?) throws {
        let remote = try server.start()
        defer { remote.stop() }
        // Rounds are generated one after another from the seed, so a run cut short by time is
        // a prefix of a longer one: a seed replays whatever the budget was.
        let steps = generator.steps(rounds: rounds ?? 2_000, seed: seed, collides: remote.collides)
        let driver = try TwoWayDriver(remote: remote, policy: policy)
        let started = ContinuousClock.now
        var failed: TwoWayDriver.Failure?
        do {
            defer { driver.close() }
            do { try driver.run(steps, until: deadline) } catch let failure as TwoWayDriver.Failure { failed = failure }
            let elapsed = (ContinuousClock.now - started).components.seconds
            print("two-way run: server=\(server.rawValue) policy=\(policy.rawValue) seed=\(seed) generator=\(generator.rawValue) seconds=\(elapsed) \(driver.figures) "
                  + "result=\(failed == nil ? "pass" : "fail")")
        }
        guard let failure = failed else { return }
        // The round that failed, counted from one: a replay of that many rounds fails too.
        let line = TwoWaySeedCorpus.Entry(server: server, policy: policy, seed: seed, rounds: driver.settles + 1, generator: generator, line: 0).corpusLine
        let shortest = try shrink(steps, failingAt: failure.step, server: server, policy: policy)
        Issue.record("""
            \(server) \(policy), seed \(seed) (FERRY_TWO_WAY_SEED=\(seed)): \(failure)
            corpus line: \(line)
            shortest failing sequence found (\(shortest.steps.count) steps): \(shortest.failure)
            \(shortest.steps.enumerated().map { "  \($0.offset + 1). \($0.element)" }.joined(separator: "\n"))
            """)
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

    /// Where timing decides, the model allows each outcome a pass that did or did not get
    /// through could leave, and no other.
    @Test func theModelAllowsWhatTimingMayDecide() {
        typealias Outcome = TwoWayModel.RecordOutcome
        // The other client writes after a local write and a pass: pushed before (the other
        // overwrites it, no conflict), or not (a conflict, decided by the policy).
        let racing: [TwoWayModel.Event] = [.local(.update("L")), .pass, .other(.update("R"))]
        #expect(TwoWayModel.allowed(start: "S", events: racing, policy: .remoteWins, choice: nil)
                == [Outcome(values: ["R"], conflicts: 0), Outcome(values: ["R"], conflicts: 1)])
        #expect(TwoWayModel.allowed(start: "S", events: racing, policy: .localWins, choice: nil)
                == [Outcome(values: ["R"], conflicts: 0), Outcome(values: ["L"], conflicts: 1)])
        #expect(TwoWayModel.allowed(start: "S", events: racing, policy: .keepBoth, choice: nil)
                == [Outcome(values: ["R"], conflicts: 0), Outcome(values: ["L", "R"], conflicts: 1)])
        // Without a pass between, only the conflict.
        #expect(TwoWayModel.allowed(start: "S", events: [.local(.update("L")), .other(.update("R"))], policy: .hold, choice: .rebaseLocal)
                == [Outcome(values: ["L"], conflicts: 1)])
        // The other client first and a pass before the local write: the local write may be
        // made on the remote's change (no conflict) or not.
        #expect(TwoWayModel.allowed(start: "S", events: [.other(.update("R")), .pass, .local(.update("L"))], policy: .remoteWins, choice: nil)
                == [Outcome(values: ["L"], conflicts: 0), Outcome(values: ["R"], conflicts: 1)])
        // local-wins after two remote writes each met: two conflicts, or one.
        let twice: [TwoWayModel.Event] = [.local(.update("L1")), .other(.update("R1")), .pass, .local(.update("L2")), .other(.update("R2"))]
        #expect(TwoWayModel.allowed(start: "S", events: twice, policy: .localWins, choice: nil).contains(Outcome(values: ["L2"], conflicts: 2)))
        #expect(TwoWayModel.allowed(start: "S", events: twice, policy: .localWins, choice: nil).allSatisfy { $0.conflicts >= 1 })
        // Both deleted: nothing to decide, whatever the timing.
        #expect(TwoWayModel.allowed(start: "S", events: [.local(.delete), .pass, .other(.delete)], policy: .keepBoth, choice: nil)
                == [Outcome(values: [], conflicts: 0)])

        // A create that landed and was deleted by the other client before the replica listed
        // it: a conflict or the delete kept, where the remote keeps a trace; where it keeps
        // none (Parse), also made again, since to the replica it never arrived.
        let deleted: [TwoWayModel.Event] = [.local(.create("L")), .pass, .other(.delete)]
        for policy in [ConflictPolicy.localWins, .remoteWins] {
            let traced = TwoWayModel.allowed(start: nil, events: deleted, policy: policy, choice: nil)
            let untraced = TwoWayModel.allowed(start: nil, events: deleted, policy: policy, choice: nil, tracesDeletions: false)
            #expect(!traced.contains(Outcome(values: ["L"], conflicts: 0)), "\(policy): \(traced)")
            #expect(untraced == traced.union([Outcome(values: ["L"], conflicts: 0)]), "\(policy): \(untraced)")
        }
        // Changed by the other client instead: it is found (by the id the client chose) and
        // meets the change as a conflict, never made twice.
        let changed: [TwoWayModel.Event] = [.local(.create("L")), .pass, .other(.update("R"))]
        for policy in ConflictPolicy.allCases {
            #expect(TwoWayModel.allowed(start: nil, events: changed, policy: policy, choice: nil, tracesDeletions: false)
                    == TwoWayModel.allowed(start: nil, events: changed, policy: policy, choice: nil), "\(policy)")
        }
        // Undone here after it landed unacknowledged: what it made is deleted.
        #expect(TwoWayModel.allowed(start: nil, events: [.local(.create("L")), .pass, .local(.delete)], policy: .remoteWins, choice: nil,
                                    tracesDeletions: false) == [Outcome(values: [], conflicts: 0)])
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
