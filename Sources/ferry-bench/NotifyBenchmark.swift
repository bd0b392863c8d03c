import ArgumentParser
import CSQLite
import FerryKit
import FerryTestSupport
import Foundation
import Synchronization

/// `ferry-bench notify`: a real ferryd with 1,000 Parse stores on an hour's interval (and a
/// few on a short one), each taking GitHub-signed notifications, against Ferry's Parse test
/// server.
///
/// (a) Latency: at `rate` notifications a second, round-robin over the stores, an object is
///     created on the remote and then the signed notification sent; the time from sending it
///     to the new row being readable in the replica (polled every `poll-ms`) is measured.
/// (b) Flood (`--flood`): 10,000 unsigned or forged requests and 1,000 signed ones within a
///     minute; ferryd's RSS sampled every second, and the start delay of the short-interval
///     stores' scheduled passes read from its own histogram before and after.
struct NotifyBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notify",
        abstract: "Change notifications into a real ferryd: latency from a signed notification to the change in the replica; a flood of forged ones."
    )

    @Option(help: "Stores taking notifications (interval 1h).") var stores = 1000
    @Option(help: "Stores on a short interval, whose schedule the flood must not disturb.") var scheduledStores = 20
    @Option(help: "Their interval, seconds.") var scheduledInterval = 10
    @Option(help: "Notifications a second in the latency run.") var rate = 100
    @Option(help: "Seconds of the latency run.") var seconds = 30
    @Option(help: "How often the replica is polled for each pending change, milliseconds.") var pollMs = 10
    @Option(help: "ferryd's max-concurrent-passes.") var maxConcurrentPasses = 4
    @Flag(help: "Then the flood: unsigned and signed requests within flood-seconds.") var flood = false
    @Option(help: "Unsigned or forged requests of the flood.") var floodUnsigned = 10_000
    @Option(help: "Signed requests of the flood.") var floodSigned = 1000
    @Option(help: "Seconds the flood is spread over.") var floodSeconds = 60
    @Option(help: "The ferryd binary (default: beside this one).") var ferryd: String?

    static let secret = "bench-notification-secret"

    func run() throws {
        let work = URL(fileURLWithPath: NSTemporaryDirectory() + "ferry-bench-notify-\(getpid())")
        try? FileManager.default.removeItem(at: work)
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let parse = try TestServer.python("parse_server.py")
        defer { parse.stop() }
        for (file, value) in [("rest-key", "rest-secret"), ("hook", Self.secret)] {
            try value.write(to: work.appendingPathComponent(file), atomically: true, encoding: .utf8)
            chmod(work.appendingPathComponent(file).path, 0o600)
        }
        let port = try Shell.freePort()
        let names = (1...stores).map { String(format: "n%04d", $0) }
        let scheduled = (0..<scheduledStores).map { String(format: "s%02d", $0 + 1) }
        var config = """
            [ferry]
            database = \(work.path)/ferry.db
            notify-listen = 127.0.0.1:\(port)
            metrics-listen = 127.0.0.1:\(port)
            max-concurrent-passes = \(maxConcurrentPasses)
            log-level = warning

            """
        func section(_ name: String, interval: String, notify: Bool) -> String {
            """

            [store \(name)]
            kind = parse
            url = \(parse.baseURL)/parse
            class = \(name.uppercased())
            application-id = ferry-test
            rest-api-key = file:\(work.path)/rest-key
            interval = \(interval)
            jitter = 0s
            \(notify ? "notify = github\nnotify-secret = file:\(work.path)/hook\n" : "")
            """
        }
        for name in names { config += section(name, interval: "1h", notify: true) }
        for name in scheduled { config += section(name, interval: "\(scheduledInterval)s", notify: false) }
        let configPath = work.appendingPathComponent("ferry.conf").path
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)

        let binary = ferryd ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("ferryd").path
        let daemon = Process()
        daemon.executableURL = URL(fileURLWithPath: binary)
        daemon.arguments = ["--config", configPath]
        var environment = ProcessInfo.processInfo.environment
        environment["RUNTIME_DIRECTORY"] = work.path + "/run"
        environment.removeValue(forKey: "NOTIFY_SOCKET")
        environment.removeValue(forKey: "JOURNAL_STREAM")
        daemon.environment = environment
        daemon.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try daemon.run()
        defer { if daemon.isRunning { kill(daemon.processIdentifier, SIGTERM); daemon.waitUntilExit() } }
        let pid = daemon.processIdentifier
        print("ferryd \(binary) (pid \(pid)), \(stores) notified stores + \(scheduledStores) every \(scheduledInterval) s, Parse server \(parse.baseURL), listener 127.0.0.1:\(port)")

        // Every store's first pass, before anything is measured.
        var clock = ContinuousClock.now
        while true {
            let text = Self.scrape(port)
            let neverSynced = text.split(separator: "\n").filter { $0.hasPrefix("ferry_store_state{") && $0.contains(#"state="never_synced"} 1"#) }.count
            if !text.isEmpty, neverSynced == 0 { break }
            guard ContinuousClock.now - clock < .seconds(600) else { throw BenchError.transferFailed("stores not synced after 10 minutes (\(neverSynced) left)") }
            usleep(500_000)
        }
        print(String(format: "first passes of %d stores: %.1f s; ferryd RSS %.1f MB", stores + scheduledStores, (ContinuousClock.now - clock).seconds,
                     Self.rssMB(pid)))

        clock = .now
        try latency(names: names, parse: parse, port: port, database: work.path + "/ferry.db", pid: pid)
        if flood { try floodRun(names: names, port: port, pid: pid) }
    }

    // MARK: - (a) Latency

    struct Pending {
        var store: String
        var expected: Int
        var sentAt: ContinuousClock.Instant
    }

    /// Threads that send with the benchmark.
    static let senders = 4

    /// Calls `send` with 0..<requests, each at its time on an even schedule over `seconds`
    /// from `startingIn` on, spread over ``senders`` threads (so one slow answer does not hold
    /// the schedule up); the group is done when every call returned.
    static func paced(requests: Int, over seconds: Double, startingIn delay: Duration,
                      _ send: @escaping @Sendable (Int) -> Void) -> DispatchGroup {
        let start = ContinuousClock.now + delay
        let group = DispatchGroup()
        for sender in 0..<senders {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                for index in stride(from: sender, to: requests, by: senders) {
                    let wait = start + .seconds(Double(index) * seconds / Double(requests)) - ContinuousClock.now
                    if wait > .zero { usleep(UInt32(wait.seconds * 1e6)) }
                    send(index)
                }
            }
        }
        return group
    }

    private func latency(names: [String], parse: TestServer, port: Int, database: String, pid: Int32) throws {
        let total = rate * seconds
        let pending = Mutex<[Pending]>([])
        let latencies = Mutex<[Double]>([])
        let sendFailures = Atomic<Int>(0)
        let created = Mutex<[String: Int]>([:])
        let secret = Array(Self.secret.utf8)
        let parsePort = parse.port
        let group = Self.paced(requests: total, over: Double(seconds), startingIn: .milliseconds(200)) { tick in
            let store = names[tick % names.count]
            let made = LoopbackPost.send(port: parsePort, path: "/__admin/mutate", headers: [("Content-Type", "application/json")],
                                         body: Array(#"{"class":"\#(store.uppercased())","create":1}"#.utf8))
            guard made == 200 else {
                sendFailures.wrappingAdd(1, ordering: .relaxed)
                return
            }
            let expected = created.withLock { counts in
                counts[store, default: 0] += 1
                return counts[store]!
            }
            let body = Array(#"{"store":"\#(store)","tick":\#(tick)}"#.utf8)
            let signature = "sha256=" + SignatureEncoding.hex(HMACSHA256.authenticationCode(key: secret, message: body))
            let sentAt = ContinuousClock.now
            pending.withLock { $0.append(Pending(store: store, expected: expected, sentAt: sentAt)) }
            let status = LoopbackPost.send(port: port, path: "/notify/\(store)", headers: [("X-Hub-Signature-256", signature)], body: body)
            if status != 202 { sendFailures.wrappingAdd(1, ordering: .relaxed) }
        }
        // The poller: each pending change's row count, until it is there or 30 s passed.
        var handle: OpaquePointer?
        guard sqlite3_open_v2(database, &handle, SQLITE_OPEN_READONLY, nil) == SQLITE_OK, let db = handle else {
            throw BenchError.transferFailed("cannot open \(database)")
        }
        defer { sqlite3_close(db) }
        sqlite3_busy_timeout(db, 1000)
        var missed = 0
        var rssPeak = 0.0
        var lastRSS = ContinuousClock.now
        let sendersDone = Atomic<Bool>(false)
        group.notify(queue: .global()) { sendersDone.store(true, ordering: .relaxed) }
        while !sendersDone.load(ordering: .relaxed) || !pending.withLock({ $0.isEmpty }) {
            let now = ContinuousClock.now
            let snapshot = pending.withLock { $0 }
            var done: Set<Int> = []
            for (index, item) in snapshot.enumerated() {
                if Self.count(db, table: item.store) >= item.expected {
                    latencies.withLock { $0.append((ContinuousClock.now - item.sentAt).seconds) }
                    done.insert(index)
                } else if now - item.sentAt > .seconds(30) {
                    missed += 1
                    done.insert(index)
                }
            }
            if !done.isEmpty {
                // Items appended since the snapshot sit after it: remove by position in the snapshot.
                pending.withLock { list in
                    list = list.enumerated().filter { !done.contains($0.offset) || $0.offset >= snapshot.count }.map(\.element)
                }
            }
            if now - lastRSS > .seconds(1) {
                rssPeak = max(rssPeak, Self.rssMB(pid))
                lastRSS = now
            }
            usleep(UInt32(pollMs * 1000))
        }
        let measured = latencies.withLock { $0 }.sorted()
        func percentile(_ p: Double) -> Double { measured.isEmpty ? .nan : measured[min(measured.count - 1, Int(Double(measured.count) * p))] }
        let metrics = Self.scrape(port)
        let triggered = metrics.split(separator: "\n").filter { $0.hasPrefix("ferry_notifications_total{") && $0.contains(#"result="triggered""#) }
            .compactMap { Double($0.split(separator: " ").last ?? "") }.reduce(0, +)
        print(String(format: "latency, signed notification -> row readable in the replica, %d notifications at %d/s over %d stores (poll every %d ms):",
                     total, rate, names.count, pollMs))
        print(String(format: "  measured %d, missed (>30 s) %d, send failures %d; median %.3f s, p90 %.3f s, p99 %.3f s, max %.3f s",
                     measured.count, missed, sendFailures.load(ordering: .relaxed), percentile(0.5), percentile(0.9), percentile(0.99), measured.last ?? .nan))
        print(String(format: "  ferryd counted %.0f triggered notifications; RSS peak %.1f MB", triggered, rssPeak))
    }

    static func count(_ db: OpaquePointer, table: String) -> Int {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, "SELECT count(*) FROM \"\(table)\"", -1, &statement, nil) == SQLITE_OK else { return -1 }
        defer { sqlite3_finalize(statement) }
        return sqlite3_step(statement) == SQLITE_ROW ? Int(sqlite3_column_int64(statement, 0)) : -1
    }

    // MARK: - (b) Flood

    private func floodRun(names: [String], port: Int, pid: Int32) throws {
        let before = Self.scrape(port)
        let delayBefore = Self.buckets(before, "ferry_pass_start_delay_seconds_bucket{trigger=\"scheduled\"")
        let rssBefore = Self.rssMB(pid)
        let totalRequests = floodUnsigned + floodSigned
        let answers = Mutex<[Int: Int]>([:])
        let signedAnswers = Mutex<[Int: Int]>([:])
        let secret = Array(Self.secret.utf8)
        let signedEvery = max(1, totalRequests / max(floodSigned, 1))
        let group = Self.paced(requests: totalRequests, over: Double(floodSeconds), startingIn: .milliseconds(100)) { index in
            var generator = SystemRandomNumberGenerator()
            let store = names[Int.random(in: 0..<names.count, using: &generator)]
            let body = Array(#"{"flood":\#(index)}"#.utf8)
            if index % signedEvery == 0 {
                let signature = "sha256=" + SignatureEncoding.hex(HMACSHA256.authenticationCode(key: secret, message: body))
                let status = LoopbackPost.send(port: port, path: "/notify/\(store)", headers: [("X-Hub-Signature-256", signature)], body: body) ?? 0
                signedAnswers.withLock { $0[status, default: 0] += 1 }
            } else {
                // Half unsigned, half with a forged signature.
                let headers = index % 2 == 0 ? [] : [("X-Hub-Signature-256", "sha256=" + String(repeating: "ab", count: 32))]
                let status = LoopbackPost.send(port: port, path: "/notify/\(store)", headers: headers, body: body) ?? 0
                answers.withLock { $0[status, default: 0] += 1 }
            }
        }
        var rssPeak = rssBefore
        let floodStart = ContinuousClock.now
        while group.wait(timeout: .now() + 1) == .timedOut { rssPeak = max(rssPeak, Self.rssMB(pid)) }
        let floodTook = (ContinuousClock.now - floodStart).seconds
        // The passes the signed ones asked for end; the scheduled stores run a few more times.
        sleep(UInt32(scheduledInterval + 2))
        let after = Self.scrape(port)
        let delayAfter = Self.buckets(after, "ferry_pass_start_delay_seconds_bucket{trigger=\"scheduled\"")
        let rssAfter = Self.rssMB(pid)
        var delta: [(String, Double)] = []
        for (le, count) in delayAfter { delta.append((le, count - (delayBefore.first { $0.0 == le }?.1 ?? 0))) }
        let scheduledPasses = delta.last?.1 ?? 0
        print(String(format: "flood: %d requests (%d signed) in %.1f s from %d threads", totalRequests, floodSigned, floodTook, Self.senders))
        print("  unsigned/forged answers by status: \(answers.withLock { $0 }.sorted { $0.key < $1.key }); signed: \(signedAnswers.withLock { $0 }.sorted { $0.key < $1.key })")
        print(String(format: "  ferryd RSS: %.1f MB before, %.1f MB peak during, %.1f MB after", rssBefore, rssPeak, rssAfter))
        let summary = delta.filter { ["0.5", "1", "2", "5", "+Inf"].contains($0.0) }.map { "≤\($0.0) s: \(Int($0.1))" }.joined(separator: ", ")
        print(String(format: "  scheduled passes of the %d short-interval stores during the flood: %.0f; start delay %@", scheduledStores, scheduledPasses, summary))
        let refused = after.split(separator: "\n").filter { $0.hasPrefix("ferry_notifications_total{") && !$0.contains("triggered") }
            .compactMap { Double($0.split(separator: " ").last ?? "") }.reduce(0, +)
        print(String(format: "  ferryd counted %.0f refused notifications", refused))
    }

    // MARK: - Readings

    static func scrape(_ port: Int) -> String {
        (try? Shell.run("/usr/bin/curl", ["-s", "--max-time", "10", "http://127.0.0.1:\(port)/metrics"])).map { String(decoding: $0, as: UTF8.self) } ?? ""
    }

    /// A histogram's cumulative buckets, in order, from an exposition.
    static func buckets(_ text: String, _ prefix: String) -> [(String, Double)] {
        text.split(separator: "\n").filter { $0.hasPrefix(prefix) }.compactMap { line in
            guard let le = line.range(of: "le=\"").map({ line[$0.upperBound...].prefix { $0 != "\"" } }),
                  let value = Double(line.split(separator: " ").last ?? "") else { return nil }
            return (String(le), value)
        }
    }

    static func rssMB(_ pid: Int32) -> Double {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kb = Double(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") else { return 0 }
        return kb / 1024
    }
}
