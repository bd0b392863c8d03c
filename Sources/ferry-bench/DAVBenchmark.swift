import ArgumentParser
import FerryKit
import FerryTestSupport
import Foundation
import Logging

/// `ferry-bench dav`: Ferry against vdirsyncer 0.21 on the same Xandikos collection. Goals: first sync ≥ 8× faster, no-change sync ≥ 15×.
///
/// Both sides store what they fetch: Ferry runs the pass `ferry sync` runs (``OneShotSync``)
/// into a fresh SQLite file, vdirsyncer syncs into a fresh vdir. A freshly started Xandikos
/// parses every card the first time a query touches it (about 6 s for 10,000 cards, printed as
/// "server cold"), a cost that falls on whichever client comes first, so one unmeasured run
/// of each client warms the server; then each side runs `--rounds` times, alternating, and the
/// medians are compared (these machines are shared and noisy).
///
/// Needs `pip install xandikos vdirsyncer` in the venv.
struct DAVBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dav",
        abstract: "First and no-change sync of N vCards from Xandikos: Ferry vs vdirsyncer."
    )

    @Option(help: "vCards loaded into Xandikos.")
    var cards = 10_000

    @Option(help: "Alternating measured rounds per side (medians are compared).")
    var rounds = 3

    @Option(help: "The venv holding xandikos and vdirsyncer.")
    var venv = ProcessInfo.processInfo.environment["FERRY_VENV"] ?? NSHomeDirectory() + "/.cache/ferry/venv"

    @Option(help: "hrefs per multiget REPORT.")
    var batch = 100

    @Option(help: "The account case: this many address books of --cards cards and as many calendars of --events events, synced as one dav-account store against vdirsyncer discovering them (0: one address book).")
    var collections = 0

    @Option(help: "Events per calendar in the account case.")
    var events = 1_000

    func run() throws {
        if collections > 0 { return try runAccount() }
        let server = try startServer()
        defer { server.stop() }
        let url = "http://127.0.0.1:\(server.port)/user/contacts/addressbook/"
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-bench-dav-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        print("xandikos on port \(server.port) with \(cards) vCards")

        let cold = try serverAlone(url: url, plan: .query, in: work)
        print(String(format: "server cold: the first listing + query after start took %.2f s (Xandikos parses every card once)", cold.seconds))

        var options = WebDAVOptions(content: .addressBook)
        options.multigetBatch = batch
        let store = StoreConfiguration(name: "bench", url: url, options: options, location: ConfigurationLocation(file: "bench", line: 1))

        _ = try ferryRound(store, in: work, label: "warm-up")
        _ = try vdirsyncerRound(url: url, in: work, label: "warm-up")
        var ferry: [(first: Double, again: Double)] = []
        var vdir: [(first: Double, again: Double)] = []
        for round in 1...max(1, rounds) {
            let f = try ferryRound(store, in: work, label: "\(round)")
            let v = try vdirsyncerRound(url: url, in: work, label: "\(round)")
            ferry.append(f)
            vdir.append(v)
            print(String(format: "round %d: ferry first %.2f s, no-change %.3f s; vdirsyncer first %.2f s, no-change %.3f s",
                         round, f.first, f.again, v.first, v.again))
        }
        let ferryFirst = CoreBenchmark.median(ferry.map(\.first))
        let ferryAgain = CoreBenchmark.median(ferry.map(\.again))
        let vdirFirst = CoreBenchmark.median(vdir.map(\.first))
        let vdirAgain = CoreBenchmark.median(vdir.map(\.again))
        print(String(format: "median     ferry first %.2f s, no-change %.3f s; vdirsyncer first %.2f s, no-change %.3f s", ferryFirst, ferryAgain, vdirFirst, vdirAgain))

        // What the server alone needs: curl sending each plan's requests on one keep-alive
        // connection, answers dropped, on the warm server.
        let query = try serverAlone(url: url, plan: .query, in: work)
        let multigets = try serverAlone(url: url, plan: .multigets, in: work)
        print(String(format: "server     alone: Ferry's requests (listing + query) %.2f s; listing + %d multigets (vdirsyncer's way) %.2f s",
                     query.seconds, multigets.requests - 1, multigets.seconds))
        print(String(format: "ratio      first %.1f× (goal ≥ 8×), no-change %.1f× (goal ≥ 15×)", vdirFirst / ferryFirst, vdirAgain / ferryAgain))
        print("verdict first sync: \(vdirFirst / ferryFirst >= 8 ? "met" : "not met"); no-change sync: \(vdirAgain / ferryAgain >= 15 ? "met" : "not met")")
    }

    /// A first sync into a new database, then a no-change sync, as `ferry sync` runs them.
    private func ferryRound(_ store: StoreConfiguration, in work: URL, label: String) throws -> (first: Double, again: Double) {
        let database = work.appendingPathComponent("ferry-\(label).db").path
        var global = GlobalConfiguration(databasePath: database, runtimeDirectory: work.path)
        global.maxConcurrentPasses = 1
        var logger = Logger(label: "ferry.bench")
        logger.logLevel = .warning
        let configuration = FerryConfiguration(global: global, stores: [store])
        func pass() throws -> (Double, PassReport) {
            let sync = try OneShotSync(configuration: configuration, storeNames: [], logger: logger)
            let started = ContinuousClock.now
            let results = sync.run(refresh: .milliseconds(100)) { _ in }
            let seconds = (ContinuousClock.now - started).seconds
            guard let result = results.first?.result else { throw ValidationError("ferry ran no pass") }
            return (seconds, try result.get())
        }
        let (first, firstReport) = try pass()
        guard firstReport.recordCount == cards, firstReport.counts.inserted == cards else {
            throw ValidationError("Ferry's first sync stored \(firstReport.recordCount) records, \(firstReport.counts.inserted) inserted, of \(cards)")
        }
        let (again, againReport) = try pass()
        guard againReport.unchanged, againReport.requests == 1 else {
            throw ValidationError("Ferry's no-change sync was not a one-request no-op: \(againReport.summary)")
        }
        if label == "1" {
            print("ferry      first sync: \(firstReport.requests) requests; no-change sync: \(againReport.requests) request")
        }
        try? FileManager.default.removeItem(atPath: database)
        return (first, again)
    }

    /// A first sync into a new vdir, then a no-change sync.
    private func vdirsyncerRound(url: String, in work: URL, label: String) throws -> (first: Double, again: Double) {
        let directory = work.appendingPathComponent("vdirsyncer-\(label)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let pair = try VdirsyncerPair(url: url, directory: directory, venv: venv)
        try pair.run(["discover"])
        let (first, _) = try timed { try pair.run(["sync"]) }
        let synced = try FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent("vdir").path).count
        guard synced == cards else { throw ValidationError("vdirsyncer stored \(synced) of \(cards) cards") }
        let (again, _) = try timed { try pair.run(["sync"]) }
        return (first, again)
    }

    /// The requests of a first sync: the listing, then one query or every card by multiget.
    enum Plan {
        case query, multigets
    }

    /// Times curl sending a first sync's requests, built by Ferry's own request builder, on one
    /// keep-alive connection, answers dropped. Card hrefs follow dav_servers.py's naming
    /// (`card-<i>.vcf`).
    private func serverAlone(url: String, plan: Plan, in work: URL) throws -> (seconds: Double, requests: Int) {
        let directory = work.appendingPathComponent("alone-\(plan)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        guard let collection = WebDAVCollection(url: url) else { throw ValidationError("not a collection URL: \(url)") }
        let builder = WebDAVRequestBuilder(collection: collection, kind: .carddav)
        var requests = [builder.syncCollection(token: "")]
        switch plan {
        case .query:
            requests.append(builder.queryAll())
        case .multigets:
            // The collection's path with its trailing slash (URL.path drops it).
            let path = String(url.drop(while: { $0 != "/" }).dropFirst(2).drop(while: { $0 != "/" }))
            for start in stride(from: 0, to: cards, by: batch) {
                requests.append(builder.multiget(hrefs: (start..<min(start + batch, cards)).map { "\(path)card-\($0).vcf" }))
            }
        }
        return (try curlAlone(requests, in: directory), requests.count)
    }

    /// Seconds curl takes to send `requests` one after another on one keep-alive connection,
    /// answers dropped: what the server alone needs for them. Bodies and the curl config go in
    /// `directory`.
    func curlAlone(_ requests: [HTTPRequest], in directory: URL) throws -> Double {
        var entries: [String] = []
        for (index, request) in requests.enumerated() {
            let file = directory.appendingPathComponent("request-\(index).xml")
            try (request.body ?? Data()).write(to: file)
            let headers = request.headers.map { "header = \"\($0.name): \($0.value)\"" }.joined(separator: "\n")
            entries.append("""
                url = "\(request.url)"
                request = "\(request.method)"
                \(headers)
                header = "Expect:"
                data-binary = "@\(file.path)"
                output = "/dev/null"
                fail
                silent

                """)
        }
        // `next` separates transfers; one after the last would start a transfer without a URL.
        let config = entries.joined(separator: "next\n")
        let configFile = directory.appendingPathComponent("curl.conf")
        try config.write(to: configFile, atomically: false, encoding: .utf8)
        return try CoreBenchmark.curl(["-K", configFile.path])
    }

    /// Xandikos with this benchmark's cards (and events and collections), its request log
    /// kept out of the figures.
    func startServer(events: Int = 0, collections: Int = 1) throws -> DAVServer {
        do {
            return try DAVServer(.xandikos, cards: cards, events: events, collections: collections, environment: ["FERRY_VENV": venv], log: "/dev/null")
        } catch {
            throw ValidationError("dav_servers.py did not start Xandikos (is it installed in \(venv)?): \(error)")
        }
    }

    /// Runs vdirsyncer; `discover` may ask questions: `answer` is what it reads (none: none).
    func vdirsyncer(_ config: String, _ arguments: [String], answer: String = "") throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: venv + "/bin/vdirsyncer")
        process.arguments = ["-c", config] + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        let input = Pipe()
        process.standardInput = input
        try process.run()
        if !answer.isEmpty { input.fileHandleForWriting.write(Data(answer.utf8)) }
        try input.fileHandleForWriting.close()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw ValidationError("vdirsyncer \(arguments.joined(separator: " ")) exited \(process.terminationStatus)")
        }
    }
}
