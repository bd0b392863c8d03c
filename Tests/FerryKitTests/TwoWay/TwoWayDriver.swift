import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// Runs random rounds of two-way sync against a real server and compares each settled round
/// with ``TwoWayModel``: local inserts, updates and deletes (SQL on the replica, as any program
/// writes it), another client's creates, updates and deletes (the server's own API), a create
/// made on both sides under one key, and between passes the faults two-way sync must survive:
/// answers lost after the server applied the write (``lossy_proxy.py``), `ferry push` killed
/// with SIGKILL, two `ferry push` processes at once, and local writes made again after any of
/// those. Every round ends with held conflicts resolved by a random choice and passes until
/// nothing is left, then checks, record by record: the server holds one of the end states the
/// model allows for the record's writes and the round's passes (``TwoWayModel/allowed(start:events:policy:choice:)``:
/// nothing local lost, nothing created twice, each conflict recorded as often as that end
/// state met one), the replica holds what the server holds, and no row is left without a
/// record.
///
/// Steps are values, so a failing run replays from its seed and shrinks to fewer steps.
final class TwoWayDriver {
    /// One replayable step.
    enum Step: CustomStringConvertible, Equatable {
        case localInsert(key: String, value: String)
        case localUpdate(key: String, value: String)
        case localDelete(key: String)
        case otherCreate(key: String, value: String)
        case otherUpdate(key: String, value: String)
        case otherDelete(key: String)
        /// An in-process pass while the proxy loses about half the writes' answers.
        case lostAnswers(seed: Int)
        /// An in-process pass whose first write's answer is lost.
        case lostAnswer
        /// An in-process pass whose writes are answered but for the one after the first `writes`.
        case lostAnswerAfter(writes: Int)
        /// `ferry push`, killed with SIGKILL after this many milliseconds.
        case killedPush(milliseconds: Int)
        /// Two `ferry push` processes at once.
        case twoPushes
        /// A local insert the remote refuses (its own refusal, or the proxy's in its place), and
        /// a pass that must keep it queued as refused, with the reason, the store incomplete.
        case refusedInsert(key: String, value: String)
        /// The row's whole body written again as a fresh one (how a person fixes a refused write).
        case localRewrite(key: String, value: String)
        /// Passes until nothing is left, held conflicts resolved by choices drawn from `seed`;
        /// then the check against the model.
        case settle(seed: Int)

        var description: String {
            switch self {
            case .localInsert(let key, let value): "local insert \(key)=\(value)"
            case .localUpdate(let key, let value): "local update \(key)=\(value)"
            case .localDelete(let key): "local delete \(key)"
            case .otherCreate(let key, let value): "other create \(key)=\(value)"
            case .otherUpdate(let key, let value): "other update \(key)=\(value)"
            case .otherDelete(let key): "other delete \(key)"
            case .lostAnswers(let seed): "pass losing answers (seed \(seed))"
            case .lostAnswer: "pass losing its first write's answer"
            case .lostAnswerAfter(let writes): "pass losing the answer of its write \(writes + 1)"
            case .killedPush(let milliseconds): "ferry push killed after \(milliseconds) ms"
            case .twoPushes: "two ferry push at once"
            case .refusedInsert(let key, let value): "local insert \(key)=\(value) the remote refuses"
            case .localRewrite(let key, let value): "local rewrite \(key)=\(value)"
            case .settle(let seed): "settle (choices seed \(seed))"
            }
        }
    }

    struct Failure: Error, CustomStringConvertible {
        var step: Int
        var message: String
        var description: String { "after step \(step + 1): \(message)" }
    }

    let remote: any TwoWayRemote
    let policy: ConflictPolicy
    private let proxy: TestServer
    private let directory: TemporaryDirectory
    private let database: SharedDatabase
    private let store: StoreConfiguration
    private let configuration: String
    private let writer: SQLiteConnection
    /// The model's view: what the last settled round left.
    private var settled: [String: [String]] = [:]
    /// The round so far: each record's writes, and the passes, in order (nil key: a pass).
    private var timeline: [(key: String?, event: TwoWayModel.Event)] = []
    private var conflictsBefore = 0
    /// What the run did, for its report line.
    private(set) var stepsRun = 0
    private(set) var conflictsChecked = 0
    private(set) var kills = 0
    private(set) var doublePushes = 0
    private(set) var settles = 0

    /// One line of `name=value` words: how much the run exercised (read by
    /// `scripts/explore-two-way.sh`, which adds them up).
    var figures: String {
        let stats = (try? JSONSerialization.jsonObject(with: proxy.control("/__proxy/stats")) as? [String: Any]) ?? [:]
        return "steps=\(stepsRun) rounds=\(settles) conflicts=\(conflictsChecked) lost=\(stats["lost"] as? Int ?? 0) "
            + "requests=\(stats["forwarded"] as? Int ?? 0) kills=\(kills) doubles=\(doublePushes)"
    }

    /// The `ferry` the driver runs: `FERRY_TWO_WAY_FERRY`, or the build's.
    static var ferry: String { ProcessInfo.processInfo.environment["FERRY_TWO_WAY_FERRY"] ?? PushCommandTests.ferry }

    /// How long a lost send may still land (``LocalChange/sendSettle``), here and in the
    /// `ferry push` processes the driver starts: a create whose send a kill cut off waits that
    /// long before it is sent again, and a round settles in a few seconds, not thirty.
    static let sendSettle = 2

    /// Set once, before anything reads ``LocalChange/sendSettle``; children inherit it. Once,
    /// because drivers run side by side and `setenv` beside a `getenv` is a race.
    private static let settleInEnvironment: Void = { setenv("FERRY_SEND_SETTLE_SECONDS", "\(sendSettle)", 1) }()

    init(remote: any TwoWayRemote, policy: ConflictPolicy) throws {
        Self.settleInEnvironment
        self.remote = remote
        self.policy = policy
        proxy = try TestServer.python("lossy_proxy.py", arguments: ["--upstream", remote.upstream])
        directory = try TemporaryDirectory()
        let replica = directory.path("ferry.db")
        var keys = try remote.section(url: proxy.baseURL, directory: directory)
        keys["push"] = "yes"
        keys["conflict"] = policy.rawValue
        // Tables here hold a handful of records: another client deleting one of two is half of
        // them, which the default max-delete-share refuses to sweep (rightly, for a real store).
        keys["max-delete-share"] = "1"
        let kind = keys.removeValue(forKey: "kind") ?? ""
        let url = keys.removeValue(forKey: "url") ?? ""
        store = try configuredStore(name: remote.table, kind: kind, url: url, keys)
        configuration = directory.path("ferry.conf")
        let section = (["[ferry]", "database = \(replica)", "", "[store \(remote.table)]", "kind = \(kind)", "url = \(url)"]
            + keys.sorted { $0.key < $1.key }.map { "\($0.key) = \($0.value)" }).joined(separator: "\n")
        try section.write(toFile: configuration, atomically: true, encoding: .utf8)
        database = try SharedDatabase(path: replica)
        // The first pass makes the table another program's connection writes.
        _ = try ParsePushTests.run(store, database).get()
        writer = try SQLiteConnection(path: replica, mode: .readWrite)
    }

    func close() {
        writer.close()
        database.close()
        proxy.stop()
    }

    // MARK: - Running steps

    /// Runs `steps` in order; the first failed check throws. With a `deadline`, stops at the
    /// first round's end (a settle) after it.
    func run(_ steps: [Step], until deadline: ContinuousClock.Instant? = nil) throws {
        for (index, step) in steps.enumerated() {
            if let deadline, ContinuousClock.now > deadline, index > 0, case .settle = steps[index - 1] { return }
            do {
                if Self.tracing { print("two-way trace \(remote.name) \(policy.rawValue) step \(index + 1): \(step)") }
                try perform(step)
                if Self.tracing { try trace() }
            } catch let failure as Failure {
                throw Failure(step: index, message: failure.message)
            } catch {
                throw Failure(step: index, message: "\(step) failed: \(error)")
            }
            stepsRun += 1
        }
    }

    /// `FERRY_TWO_WAY_TRACE=1`: every step and every pass's report printed as it runs.
    static let tracing = ProcessInfo.processInfo.environment["FERRY_TWO_WAY_TRACE"] == "1"

    private func perform(_ step: Step) throws {
        switch step {
        case .localInsert(let key, let value):
            try writer.execute("INSERT INTO \(quoted(remote.table))(body) VALUES (\(literal(remote.body(key: key, value: value))))")
            record(key, .local(.create(value)))
        case .localUpdate(let key, let value):
            // Skipped when the replica has no row holding the key (deleted, or a shrunk sequence
            // never made it), or several, or when keep-both copied it this round.
            guard let (id, body) = try row(key), try !copiedThisRound(key) else { return }
            try writer.execute("UPDATE \(quoted(remote.table)) SET body = \(literal(remote.replacingValue(in: body, with: value))) WHERE id = \(literal(id))")
            record(key, .local(.update(value)))
        case .localDelete(let key):
            guard let (id, _) = try row(key), try !copiedThisRound(key) else { return }
            try writer.execute("DELETE FROM \(quoted(remote.table)) WHERE id = \(literal(id))")
            record(key, .local(.delete))
        case .otherCreate(let key, let value):
            try remote.otherCreate(key: key, value: value)
            record(key, .other(.create(value)))
        case .otherUpdate(let key, let value):
            // Only the one record the server holds under the key now, never a key with copies.
            guard (settled[key]?.count ?? 0) <= 1, try !copiedThisRound(key), try remote.otherUpdate(key: key, value: value) else { return }
            record(key, .other(.update(value)))
        case .otherDelete(let key):
            guard (settled[key]?.count ?? 0) <= 1, try !copiedThisRound(key), try remote.otherDelete(key: key) else { return }
            record(key, .other(.delete))
        case .lostAnswers(let seed):
            _ = try proxy.control("/__proxy/lose?rate=0.5&seed=\(seed)", method: "POST")
            _ = try? pass()
            _ = try proxy.control("/__proxy/lose?rate=0", method: "POST")
            record(nil, .pass)
        case .lostAnswer:
            _ = try proxy.control("/__proxy/lose?writes=1", method: "POST")
            _ = try? pass()
            _ = try proxy.control("/__proxy/lose?writes=0", method: "POST")
            record(nil, .pass)
        case .lostAnswerAfter(let writes):
            _ = try proxy.control("/__proxy/lose?writes=1&after=\(writes)", method: "POST")
            _ = try? pass()
            _ = try proxy.control("/__proxy/lose?writes=0", method: "POST")
            record(nil, .pass)
        case .killedPush(let milliseconds):
            let push = try ferry(["push", "-c", configuration])
            usleep(UInt32(milliseconds) * 1000)
            kill(push.processIdentifier, SIGKILL)
            push.waitUntilExit()
            kills += 1
            record(nil, .pass)
        case .twoPushes:
            let pushes = try (0..<2).map { _ in try ferry(["push", "-c", configuration]) }
            for push in pushes { push.waitUntilExit() }
            doublePushes += 1
            record(nil, .pass)
            for push in pushes where ![0, 2].contains(push.terminationStatus) {
                throw Failure(step: 0, message: "ferry push beside another exited \(push.terminationStatus)")
            }
        case .refusedInsert(let key, let value):
            let refused = remote.refusedBody(key: key, value: value)
            if refused == nil { _ = try proxy.control("/__proxy/refuse?writes=1&status=409", method: "POST") }
            try writer.execute("INSERT INTO \(quoted(remote.table))(body) VALUES (\(literal(refused ?? remote.body(key: key, value: value))))")
            record(key, .local(.create(value)))
            let report = try pass()
            record(nil, .pass)
            let outbox = try database.write { try $0.outboxSummary(of: remote.table) }
            guard report.push.refused == 1, outbox.refused == 1, outbox.lastRefusal?.isEmpty == false, !report.isComplete else {
                throw Failure(step: 0, message: "a refused insert: \(report.summary), \(outbox), gaps \(report.gaps)")
            }
        case .localRewrite(let key, let value):
            guard let (id, _) = try row(key), try !copiedThisRound(key) else { return }
            try writer.execute("UPDATE \(quoted(remote.table)) SET body = \(literal(remote.body(key: key, value: value))) WHERE id = \(literal(id))")
            record(key, .local(.update(value)))
        case .settle(let seed):
            try settle(seed: seed)
        }
    }

    /// The server's records, the replica's rows and the queue, for a trace.
    private func trace() throws {
        let rows = try database.write { try $0.liveBodies(of: remote.table) }
        let queue = try database.write { try $0.queuedLocalChanges(of: remote.table) }
        print("two-way trace   server \(try remote.records().sorted { $0.key < $1.key })")
        print("two-way trace   replica \(rows.sorted { $0.key < $1.key }.map { "\($0.key): \(remote.keyAndValue(of: $0.value).map { "\($0.key)=\($0.value)" } ?? "?")" })")
        print("two-way trace   queue \(queue.map { "\($0.id) \($0.operation) sent \($0.sent != nil)" })")
    }

    private func record(_ key: String?, _ event: TwoWayModel.Event) {
        timeline.append((key, event))
    }

    /// The keys of conflicts recorded this round (since the last settle's check), newest first.
    private func conflictKeysThisRound() throws -> [String] {
        let conflicts = try database.write { try $0.conflicts(of: remote.table, all: true, limit: 100_000) }
        return conflicts.dropLast(conflictsBefore).compactMap { conflict in
            (conflict.localBody ?? conflict.remoteBody).flatMap(remote.keyAndValue(of:))?.key ?? "#\(conflict.conflictID)"
        }
    }

    /// Whether keep-both may have copied the key's record this round: a write by key could
    /// then meet the copy, which is another record.
    private func copiedThisRound(_ key: String) throws -> Bool {
        guard policy == .keepBoth else { return false }
        return try conflictKeysThisRound().contains(key)
    }

    /// The live row holding `key`, when exactly one does.
    private func row(_ key: String) throws -> (id: String, body: String)? {
        let rows = try database.write { try $0.liveBodies(of: remote.table) }.filter { remote.keyAndValue(of: $0.value)?.key == key }
        guard rows.count == 1, let row = rows.first else { return nil }
        return (row.key, row.value)
    }

    private func ferry(_ arguments: [String]) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.ferry)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    private func pass() throws -> PassReport {
        let result = try ParsePushTests.run(store, database)
        if Self.tracing {
            switch result {
            case .success(let report): print("two-way trace   pass: \(report.summary)")
            case .failure(let error): print("two-way trace   pass failed: \(error)")
            }
        }
        return try result.get()
    }

    // MARK: - Settling and checking

    private func settle(seed: Int) throws {
        var random = SeededGenerator(seed: UInt64(seed))
        var chosen: [String: ConflictPlan.Resolution] = [:]
        var quiet = 0
        for _ in 0..<8 {
            let report: PassReport
            do { report = try pass() } catch { throw Failure(step: 0, message: "a pass without faults failed: \(error)") }
            // Held conflicts: a person chooses.
            let open = try database.write { try $0.conflicts(of: remote.table) }
            for conflict in open {
                guard let key = (conflict.localBody ?? conflict.remoteBody).flatMap(remote.keyAndValue(of:))?.key else {
                    throw Failure(step: 0, message: "held conflict #\(conflict.conflictID) on \(conflict.id) names no key")
                }
                let choice = [ConflictPlan.Resolution.takeRemote, .rebaseLocal, .keepBoth][Int(random.next() % 3)]
                chosen[key] = choice
                _ = try database.write { try $0.chooseResolution(choice, conflict: conflict.conflictID) }
            }
            if open.isEmpty, report.isComplete, report.push.isEmpty, report.counts.inserted + report.counts.updated + report.counts.deleted == 0 {
                quiet += 1
                if quiet == 2 { break }
            } else {
                quiet = 0
                // A create a kill cut off waits for its send to settle before it goes again.
                if !report.isComplete { Thread.sleep(forTimeInterval: Double(Self.sendSettle) / 2) }
            }
        }
        // Every end state the model allows, record by record: each record's writes and every
        // pass of the round, which may have synced it or not.
        var allowed: [String: Set<TwoWayModel.RecordOutcome>] = [:]
        for key in Set(timeline.compactMap(\.key)) {
            let events = timeline.filter { $0.key == nil || $0.key == key }.map(\.event)
            let start = settled[key].flatMap { $0.count == 1 ? $0[0] : nil }
            allowed[key] = TwoWayModel.allowed(start: start, events: events, policy: policy, choice: chosen[key],
                                               tracesDeletions: remote.seesDeletionsOfUnlistedRecords)
        }
        settled = try check(allowed)
        settles += 1
        timeline = []
    }

    /// Checks the settled round against what the model allows; returns the records it left.
    private func check(_ allowed: [String: Set<TwoWayModel.RecordOutcome>]) throws -> [String: [String]] {
        var problems: [String] = []
        let recorded = try conflictKeysThisRound()
        conflictsBefore += recorded.count
        conflictsChecked += recorded.count
        let conflicts = Dictionary(recorded.map { ($0, 1) }, uniquingKeysWith: +)
        func compare(_ found: [String: [String]], _ side: String) {
            for key in Set(found.keys).union(settled.keys).union(allowed.keys).union(conflicts.keys).sorted() {
                let outcome = TwoWayModel.RecordOutcome(values: found[key] ?? [], conflicts: conflicts[key] ?? 0)
                if let allowed = allowed[key] {
                    if !allowed.contains(outcome) {
                        problems.append("\(side) holds \(key): \(outcome) (allowed: \(allowed.map(\.description).sorted().joined(separator: " | ")))")
                    }
                } else if outcome != TwoWayModel.RecordOutcome(values: settled[key] ?? [], conflicts: 0) {
                    problems.append("\(side) holds \(key): \(outcome), untouched this round (expected \(settled[key] ?? []))")
                }
            }
        }
        let onServer = try remote.records()
        compare(onServer, "server")
        let rows = try database.write { try $0.liveBodies(of: remote.table) }
        let replica = remote.grouped(rows.values)
        if replica != onServer { problems.append("replica holds \(differences(replica, onServer)) (against the server's)") }
        let placeholders = rows.keys.filter { $0.hasPrefix("local-") }
        if !placeholders.isEmpty { problems.append("placeholder rows \(placeholders.sorted())") }
        let outbox = try database.write { try $0.outboxSummary(of: remote.table) }
        if !outbox.isEmpty { problems.append("outbox not empty: \(outbox)") }
        let pending = try database.write { try $0.pendingRecordIDs(of: remote.table) }
        if !pending.isEmpty { problems.append("pending records \(pending)") }
        if !problems.isEmpty { throw Failure(step: 0, message: problems.joined(separator: "; ")) }
        return onServer
    }

    private func differences(_ found: [String: [String]], _ expected: [String: [String]]) -> String {
        let keys = Set(found.keys).union(expected.keys).filter { found[$0] != expected[$0] }.sorted()
        return keys.map { "\($0): \(found[$0] ?? []) (expected \(expected[$0] ?? []))" }.joined(separator: ", ")
    }

    // MARK: - Generating steps

    /// How a round's steps are drawn.
    enum Generator: String, CaseIterable, Sendable {
        /// ``steps(rounds:seed:collides:)``: on a record both sides write, local writes first,
        /// and after a fault each side writes only records the other left alone.
        case ordered
        /// ``interleavedSteps(rounds:seed:collides:)``: any write of either side at any time.
        case interleaved

        func steps(rounds: Int, seed: UInt64, collides: Bool) -> [Step] {
            switch self {
            case .ordered: TwoWayDriver.steps(rounds: rounds, seed: seed, collides: collides)
            case .interleaved: TwoWayDriver.interleavedSteps(rounds: rounds, seed: seed, collides: collides)
            }
        }
    }

    /// Rounds of random steps from `seed`, each ending in a settle, where either side writes
    /// any record at any time, between faults: the other client writes records the replica
    /// wrote this round, before, between and after its passes, which is where real clients
    /// collide and where timing decides (the model's allowed end states). A third of the
    /// writes go to records written this round already, so the sides meet.
    static func interleavedSteps(rounds: Int, seed: UInt64, collides: Bool) -> [Step] {
        var random = SeededGenerator(seed: seed)
        var steps: [Step] = []
        var known: [String] = []
        var fresh = 0
        func value() -> String {
            fresh += 1
            return "v\(fresh)"
        }
        func pick(_ keys: [String]) -> String { keys[Int(random.next() % UInt64(keys.count))] }
        for round in 0..<rounds {
            var made: [String] = []
            var insertedHere: [String] = []
            var touched: [String] = []
            for _ in 0..<(2 + Int(random.next() % 7)) {
                let keys = known + made
                func target() -> String {
                    let key = !touched.isEmpty && random.next() % 3 == 0 ? pick(touched) : pick(keys)
                    touched.append(key)
                    return key
                }
                switch keys.isEmpty ? random.next() % 2 : random.next() % 11 {
                case 0:
                    let key = "l\(round)-\(fresh)"
                    steps.append(.localInsert(key: key, value: value()))
                    made.append(key)
                    insertedHere.append(key)
                    touched.append(key)
                case 1:
                    let key = "r\(round)-\(fresh)"
                    steps.append(.otherCreate(key: key, value: value()))
                    made.append(key)
                    touched.append(key)
                case 2, 3: steps.append(.localUpdate(key: target(), value: value()))
                case 4: steps.append(.localDelete(key: target()))
                case 5, 6: steps.append(.otherUpdate(key: target(), value: value()))
                case 7: steps.append(.otherDelete(key: target()))
                case 8: steps.append(.lostAnswers(seed: Int(random.next() % 10_000)))
                case 9: steps.append(.killedPush(milliseconds: Int(random.next() % 400)))
                default: steps.append(.twoPushes)
                }
            }
            // A create on both sides under one key (a vCard's UID names the member).
            if collides, let key = insertedHere.last, random.next() % 3 == 0 {
                steps.append(.otherCreate(key: key, value: value()))
            }
            steps.append(.settle(seed: Int(random.next() % 10_000)))
            for key in made where !known.contains(key) { known.append(key) }
        }
        return steps
    }

    /// Rounds of random steps from `seed`, each ending in a settle. Steps name records by key;
    /// one whose record is gone by then (deleted, or a key keep-both copied) is skipped when
    /// run, so the generator need not foresee conflicts and choices.
    static func steps(rounds: Int, seed: UInt64, collides: Bool) -> [Step] {
        var random = SeededGenerator(seed: seed)
        var steps: [Step] = []
        var known: [String] = []
        var fresh = 0
        func value() -> String {
            fresh += 1
            return "v\(fresh)"
        }
        func pick(_ keys: [String]) -> String { keys[Int(random.next() % UInt64(keys.count))] }
        for round in 0..<rounds {
            var before: [Step] = []
            var otherTouched: Set<String> = []
            var localTouched: Set<String> = []
            var inserted: [String] = []
            for _ in 0..<Int(random.next() % 3) {
                switch known.isEmpty ? 0 : random.next() % 3 {
                case 0:
                    let key = "r\(round)-\(fresh)"
                    before.append(.otherCreate(key: key, value: value()))
                    otherTouched.insert(key)
                case 1:
                    let key = pick(known)
                    before.append(.otherUpdate(key: key, value: value()))
                    otherTouched.insert(key)
                default:
                    let key = pick(known)
                    before.append(.otherDelete(key: key))
                    otherTouched.insert(key)
                }
            }
            // A third of local edits go to records the other client wrote this round: among
            // many records, random picks alone would rarely meet, and conflicts are what breaks.
            let contested = known.filter { otherTouched.contains($0) }
            func target() -> String {
                !contested.isEmpty && random.next() % 3 == 0 ? pick(contested) : pick(known + inserted)
            }
            for _ in 0..<(1 + Int(random.next() % 4)) {
                switch known.isEmpty && inserted.isEmpty ? 0 : random.next() % 3 {
                case 0:
                    let key = "l\(round)-\(fresh)"
                    before.append(.localInsert(key: key, value: value()))
                    inserted.append(key)
                case 1:
                    let key = target()
                    before.append(.localUpdate(key: key, value: value()))
                    localTouched.insert(key)
                default:
                    let key = target()
                    before.append(.localDelete(key: key))
                    localTouched.insert(key)
                }
            }
            // A create on both sides under one key (a vCard's UID names the member).
            if collides, let key = inserted.last, random.next() % 3 == 0 {
                before.append(.otherCreate(key: key, value: value()))
                otherTouched.insert(key)
            }
            before.shuffle(using: &random)
            // Local writes come before the other client's on a key both write, so a local
            // create exists before its collision and no local write follows a remote one the
            // replica has not seen (the model's rounds).
            steps += before.filter { if case .localInsert = $0 { true } else { false } }
            steps += before.filter { if case .localInsert = $0 { false } else { true } }
            // Faults, each possibly followed by local writes of records the other client left
            // alone this round, and by the other client's writes of records left alone here: a
            // write that meets only its own side's earlier ones settles the same whichever pass
            // saw what, so the model still knows the outcome.
            for _ in 0..<Int(random.next() % 3) {
                switch random.next() % 3 {
                case 0: steps.append(.lostAnswers(seed: Int(random.next() % 10_000)))
                case 1: steps.append(.killedPush(milliseconds: Int(random.next() % 400)))
                default: steps.append(.twoPushes)
                }
                let quietHere = (known + inserted).filter { !otherTouched.contains($0) }
                if !quietHere.isEmpty, random.next() % 2 == 0 {
                    let key = pick(quietHere)
                    steps.append(random.next() % 3 == 0 ? .localDelete(key: key) : .localUpdate(key: key, value: value()))
                    localTouched.insert(key)
                }
                let quietThere = known.filter { !localTouched.contains($0) && !inserted.contains($0) }
                switch random.next() % 4 {
                case 0:
                    let key = "r\(round)-\(fresh)"
                    steps.append(.otherCreate(key: key, value: value()))
                    otherTouched.insert(key)
                case 1 where !quietThere.isEmpty:
                    let key = pick(quietThere)
                    steps.append(random.next() % 3 == 0 ? .otherDelete(key: key) : .otherUpdate(key: key, value: value()))
                    otherTouched.insert(key)
                default: break
                }
            }
            steps.append(.settle(seed: Int(random.next() % 10_000)))
            for key in otherTouched.union(inserted) where !known.contains(key) { known.append(key) }
        }
        return steps
    }
}
