import ArgumentParser
import FerryKit
import FerryTestSupport
import Foundation
import Logging

/// `ferry-bench push`: N local updates to a CardDAV collection on Xandikos pushed by Ferry,
/// against vdirsyncer 0.21 uploading the same N changed cards from a vdir to the same
/// collection, in the same run. Goal: Ferry ≥ 3× faster. Then N updates to a Parse class
/// (parse_server.py) pushed by Ferry, which has no vdirsyncer counterpart.
///
/// Every round changes every card once per client with the same edit (a `NOTE:ferry-bench`
/// line before `END:VCARD`): Ferry's replica by one SQL `UPDATE` from the sqlite3 shell (a
/// client of its own, as any application's), then `ferry push`'s passes (``OneShotSync``
/// without its pull) are timed until the outbox is empty; the vdir's files are rewritten,
/// then `vdirsyncer sync` is timed. Before its edit each client catches up, untimed, with
/// what the others uploaded, so each timed run has N local changes and no remote ones. The
/// clients alternate, and the medians are compared (these machines are shared and noisy).
///
/// "Server alone" is curl sending the same requests on one keep-alive connection, answers
/// dropped: N `PUT`s with `If-Match` for Xandikos (which commits each one to git), so the
/// reader sees how close each client is to the server's own cost; for Parse, the requests Ferry
/// sends, a query, a `/batch` and a query per 50 changes. Xandikos's PUT grows with the
/// collection (about 15 ms at 300 cards, 35 ms at 1,000, 65 ms at 2,000 here), so every client
/// that sends one PUT after another sits near the server's own time, and 10,000 cards would take
/// hours: the default is 1,000.
///
/// Needs `pip install xandikos vdirsyncer` in the venv, and the sqlite3 shell.
struct PushBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push",
        abstract: "Pushing N local updates: Ferry vs vdirsyncer on Xandikos, and Ferry on Parse."
    )

    @Option(help: "vCards in Xandikos (and objects in the Parse class), every one updated each round.")
    var cards = 1_000

    @Option(help: "Alternating measured rounds per side (medians are compared).")
    var rounds = 3

    @Option(help: "The venv holding xandikos and vdirsyncer.")
    var venv = ProcessInfo.processInfo.environment["FERRY_VENV"] ?? NSHomeDirectory() + "/.cache/ferry/venv"

    func run() throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-bench-push-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        do {
            try carddav(in: work)
        } catch {
            // Xandikos logs every request; its log is shown only when something failed.
            let log = (try? String(contentsOf: work.appendingPathComponent("xandikos.log"), encoding: .utf8)) ?? ""
            FileHandle.standardError.write(Data(("xandikos log, last lines:\n" + log.split(separator: "\n").suffix(20).joined(separator: "\n") + "\n").utf8))
            throw error
        }
        try parse(in: work)
    }

    // MARK: - CardDAV

    private func carddav(in work: URL) throws {
        let server = try DAVServer(.xandikos, cards: cards, events: 0, environment: ["FERRY_VENV": venv], log: work.appendingPathComponent("xandikos.log").path)
        defer { server.stop() }
        let url = server.addressBookURL
        guard let collection = WebDAVCollection(url: url) else { throw ValidationError("not a collection URL: \(url)") }
        let replica = Replica(try configuredStore(name: "contacts", kind: "carddav", url: url, ["push": "yes"]), in: work)
        let (ferryFirst, first) = try timed { try replica.pass(pull: true) }
        guard first.recordCount == cards else { throw ValidationError("Ferry's first sync stored \(first.recordCount) of \(cards) cards") }
        let vdirsyncer = try VdirsyncerPair(url: url, directory: work.appendingPathComponent("vdirsyncer"), venv: venv)
        try vdirsyncer.run(["discover"])
        let vdirFirst = try vdirsyncer.sync()
        guard try vdirsyncer.files().count == cards else { throw ValidationError("vdirsyncer's first sync stored \(try vdirsyncer.files().count) of \(cards) cards") }
        print(String(format: "xandikos on port %d with %d vCards; first syncs (untimed): ferry %.2f s, vdirsyncer %.2f s", server.port, cards, ferryFirst, vdirFirst))

        let ids = try replica.rows("SELECT id FROM contacts ORDER BY id").compactMap { $0["id"] as? String }
        let sample = [ids[0], ids[ids.count / 2], ids[ids.count - 1]].map { collection.url(forHref: collection.href(forID: $0)) }
        var ferry: [Double] = [], alone: [Double] = [], vdir: [Double] = []
        for round in 1...max(1, rounds) {
            // Ferry: catch up with the others' uploads, one SQL UPDATE, then ferry push.
            _ = try replica.pass(pull: true)
            let before = try replica.rows("SELECT body FROM contacts WHERE id = '\(ids[0])'").first?["body"] as? String ?? ""
            try replica.sql(Self.editSQL(table: "contacts", tag: "ferry \(round)"))
            let after = try replica.rows("SELECT body FROM contacts WHERE id = '\(ids[0])'").first?["body"] as? String
            guard after == Self.edited(before, tag: "ferry \(round)") else { throw ValidationError("the SQL edit is not the vdir edit: \((after ?? "no row").debugDescription)") }
            let push = try replica.push(expecting: cards)
            try Self.check(sample, hold: "ferry \(round)")
            // The server alone: the same PUTs with If-Match, at the ETags Ferry's push stored.
            let rows = try replica.rows("SELECT id, version, body FROM contacts")
            let seconds = try Self.curl(in: work.appendingPathComponent("alone-\(round)"), rows.enumerated().map { index, row -> Transfer in
                let body = Self.edited(row["body"] as? String ?? "", tag: "alone \(round)")
                return (method: "PUT", url: collection.url(forHref: collection.href(forID: row["id"] as? String ?? "")), body: Data(body.utf8),
                        headers: ["If-Match: \(row["version"] as? String ?? "")", "Content-Type: text/vcard; charset=utf-8"], name: "\(index).vcf")
            })
            try Self.check(sample, hold: "alone \(round)")
            // vdirsyncer: catch up, rewrite every file with the same edit, sync.
            _ = try vdirsyncer.sync()
            let edited = try vdirsyncer.edit(tag: "vdirsyncer \(round)")
            guard edited == cards else { throw ValidationError("edited \(edited) of \(cards) vdir files") }
            let upload = try vdirsyncer.sync()
            try Self.check(sample, hold: "vdirsyncer \(round)")
            ferry.append(push.seconds)
            alone.append(seconds)
            vdir.append(upload)
            print(String(format: "round %d: ferry push %.2f s (%d pass%@, %d requests); server alone %.2f s; vdirsyncer sync %.2f s",
                         round, push.seconds, push.passes, push.passes == 1 ? "" : "es", push.requests, seconds, upload))
        }
        let (f, a, v) = (CoreBenchmark.median(ferry), CoreBenchmark.median(alone), CoreBenchmark.median(vdir))
        print(String(format: "median     ferry %.2f s (%.0f cards/s); server alone %.2f s (%.0f PUTs/s); vdirsyncer %.2f s (%.0f cards/s)",
                     f, Double(cards) / f, a, Double(cards) / a, v, Double(cards) / v))
        print(String(format: "ratio      vdirsyncer/ferry %.2f× (goal ≥ 3×); ferry/server alone %.2f×; vdirsyncer/server alone %.2f×", v / f, f / a, v / a))
        print("verdict    push of \(cards) cards: \(v / f >= 3 ? "met" : "not met")")
    }

    // MARK: - Parse

    private func parse(in work: URL) throws {
        let parse = try ParseTestServer.start()
        let server = parse.server
        defer { server.stop() }
        try parse.admin("seed", ["class": "Quote", "count": cards])
        let key = work.appendingPathComponent("rest-key")
        guard FileManager.default.createFile(atPath: key.path, contents: Data("rest-secret".utf8), attributes: [.posixPermissions: 0o600]) else {
            throw ValidationError("cannot write \(key.path)")
        }
        let store = try configuredStore(name: "quotes", kind: "parse", url: server.baseURL + "/parse",
                                        ["class": "Quote", "application-id": "ferry-test", "rest-api-key": "file:" + key.path, "push": "yes"])
        let replica = Replica(store, in: work)
        let first = try replica.pass(pull: true)
        guard first.recordCount == cards else { throw ValidationError("Ferry's first sync stored \(first.recordCount) of \(cards) objects") }
        print("parse_server.py on port \(server.port) with \(cards) objects")
        let ids = try replica.rows("SELECT id FROM quotes ORDER BY id").compactMap { $0["id"] as? String }
        let objectURL = { (id: String) in server.baseURL + "/parse/classes/Quote/" + id }
        let headers = ["X-Parse-Application-Id: ferry-test", "X-Parse-REST-API-Key: rest-secret", "Accept: application/json"]
        func check(_ text: String) throws {
            for id in [ids[0], ids[ids.count / 2], ids[ids.count - 1]] {
                let data = try Shell.run("/usr/bin/curl", ["-sS", "--fail"] + headers.flatMap { ["-H", $0] } + [objectURL(id)])
                let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
                guard object?["text"] as? String == text else { throw ValidationError("Parse object \(id) does not hold text \(text.debugDescription)") }
            }
        }
        var ferry: [Double] = [], alone: [Double] = []
        for round in 1...max(1, rounds) {
            _ = try replica.pass(pull: true)
            try replica.sql("UPDATE quotes SET body = json_set(body, '$.text', 'ferry-bench ferry \(round)')")
            let push = try replica.push(expecting: cards)
            try check("ferry-bench ferry \(round)")
            // The same requests Ferry sends, per 50 objects: a query, a /batch, a query.
            let seconds = try Self.curl(in: work.appendingPathComponent("parse-alone-\(round)"), stride(from: 0, to: ids.count, by: 50).flatMap { start -> [Transfer] in
                let chunk = Array(ids[start..<min(start + 50, ids.count)])
                let query = server.baseURL + "/parse/classes/Quote?where=" + Self.formEncoded(#"{"objectId":{"$in":["# + chunk.map { "\"\($0)\"" }.joined(separator: ",") + "]}}") + "&limit=\(chunk.count)"
                let requests = chunk.map { #"{"method":"PUT","path":"/parse/classes/Quote/\#($0)","body":{"text":"ferry-bench alone \#(round)"}}"# }
                let batch = Data((#"{"requests":["# + requests.joined(separator: ",") + "]}").utf8)
                return [(method: "GET", url: query, body: nil, headers: headers, name: ""),
                        (method: "POST", url: server.baseURL + "/parse/batch", body: batch, headers: headers + ["Content-Type: application/json"], name: "batch-\(start).json"),
                        (method: "GET", url: query, body: nil, headers: headers, name: "")]
            })
            try check("ferry-bench alone \(round)")
            ferry.append(push.seconds)
            alone.append(seconds)
            print(String(format: "round %d: ferry push %.2f s (%d pass%@, %d requests); server alone (a query, a /batch, a query per 50) %.2f s",
                         round, push.seconds, push.passes, push.passes == 1 ? "" : "es", push.requests, seconds))
        }
        let (f, a) = (CoreBenchmark.median(ferry), CoreBenchmark.median(alone))
        print(String(format: "median     ferry push %.2f s (%.0f objects/s); server alone %.2f s (%.0f objects/s); ferry/server alone %.2f×",
                     f, Double(cards) / f, a, Double(cards) / a, f / a))
    }

    // MARK: - The edit

    static let marker = "NOTE:ferry-bench "

    /// A card with its `NOTE:ferry-bench` line (just before `END:VCARD`) set to `tag`, in the
    /// card's own line ending: what the vdir and the server-alone requests get.
    static func edited(_ card: String, tag: String) -> String {
        let newline = card.contains("\r\n") ? "\r\n" : "\n"
        var lines = card.components(separatedBy: newline).filter { !$0.hasPrefix(marker) }
        guard let end = lines.lastIndex(where: { $0.uppercased() == "END:VCARD" }) else { return card }
        lines.insert(marker + tag, at: end)
        return lines.joined(separator: newline)
    }

    /// The same edit of every row as one SQL `UPDATE`, in each body's own line ending
    /// (checked against ``edited(_:tag:)`` on a row each round).
    static func editSQL(table: String, tag: String) -> String {
        let newline = "(CASE WHEN instr(body, char(13, 10)) > 0 THEN char(13, 10) ELSE char(10) END)"
        let at = "instr(body, char(10) || '\(marker)')"
        return "UPDATE \(table) SET body = CASE WHEN \(at) > 0 THEN substr(body, 1, \(at)) "
            + "ELSE substr(body, 1, instr(body, 'END:VCARD') - 1) END || '\(marker)\(tag)' || \(newline) || 'END:VCARD' || \(newline)"
    }

    /// Whether the server holds `tag` in each sampled card.
    static func check(_ urls: [String], hold tag: String) throws {
        for url in urls {
            let card = String(decoding: try Shell.run("/usr/bin/curl", ["-sS", "--fail", url]), as: UTF8.self)
            guard card.contains(marker + tag + "\r\n") || card.contains(marker + tag + "\n") else {
                throw ValidationError("\(url) does not hold the edit \(tag.debugDescription)")
            }
        }
    }

    // MARK: - Clients

    /// A push store's replica, passed as `ferry sync` (pull) and `ferry push` (no pull) pass it,
    /// and read or written by the sqlite3 shell as any other program would.
    private struct Replica {
        let path: String
        let configuration: FerryConfiguration
        let logger: Logger

        init(_ store: StoreConfiguration, in work: URL) {
            path = work.appendingPathComponent("\(store.name).db").path
            var global = GlobalConfiguration(databasePath: path, runtimeDirectory: work.path)
            global.maxConcurrentPasses = 1
            configuration = FerryConfiguration(global: global, stores: [store])
            var logger = Logger(label: "ferry.bench")
            logger.logLevel = .warning
            self.logger = logger
        }

        func pass(pull: Bool) throws -> PassReport {
            let sync = try OneShotSync(configuration: configuration, storeNames: [], logger: logger)
            sync.pull = pull
            guard let result = sync.run(refresh: .milliseconds(100), progress: { _ in }).first?.result else { throw ValidationError("ferry ran no pass") }
            return try result.get()
        }

        /// `ferry push` until nothing is queued (a pass pushes at most
        /// `PushPhase.changesPerPush` changes), timed; each of the `expected` changes
        /// must be accepted and the outbox left empty.
        func push(expecting expected: Int) throws -> (seconds: Double, passes: Int, requests: Int) {
            let queued = try count("SELECT count(*) FROM ferry_outbox WHERE state = 0")
            guard queued == expected else { throw ValidationError("\(queued) changes queued, not \(expected)") }
            var counts = PushCounts()
            var passes = 0
            let started = ContinuousClock.now
            while true {
                let report = try pass(pull: false)
                passes += 1
                counts.pushed += report.push.pushed
                counts.conflicts += report.push.conflicts
                counts.refused += report.push.refused
                counts.requests += report.push.requests
                if report.localQueued == 0 || report.push.isEmpty || passes == 100 { break }
            }
            let seconds = (ContinuousClock.now - started).seconds
            let left = try count("SELECT count(*) FROM ferry_outbox")
            guard counts.pushed == expected, counts.conflicts == 0, counts.refused == 0, left == 0 else {
                throw ValidationError("ferry push: \(counts.summary) of \(expected) in \(passes) passes; \(left) left in ferry_outbox")
            }
            return (seconds, passes, counts.requests)
        }

        func sql(_ statement: String) throws {
            try Shell.run("/usr/bin/sqlite3", ["-batch", "-bail", path, statement])
        }

        func count(_ query: String) throws -> Int {
            let text = String(decoding: try Shell.run("/usr/bin/sqlite3", ["-batch", path, query]), as: UTF8.self)
            guard let value = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) else { throw ValidationError("sqlite3 answered \(text) to \(query)") }
            return value
        }

        func rows(_ query: String) throws -> [[String: Any]] {
            let data = try Shell.run("/usr/bin/sqlite3", ["-batch", "-json", path, query])
            guard !data.allSatisfy({ $0 == 0x0A || $0 == 0x20 }) else { return [] }
            guard let rows = try JSONSerialization.jsonObject(with: data) as? [[String: Any]] else { throw ValidationError("sqlite3 -json answered no rows") }
            return rows
        }
    }

    // MARK: - The server alone

    /// A query parameter's value, percent-encoded for a URL.
    static func formEncoded(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }

    typealias Transfer = (method: String, url: String, body: Data?, headers: [String], name: String)

    /// Times curl sending `transfers` in order on one keep-alive connection, answers dropped;
    /// every answer must be 2xx. Each body is written to `name` in `directory` first.
    static func curl(in directory: URL, _ transfers: [Transfer]) throws -> Double {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        func quoted(_ text: String) -> String {
            "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
        }
        var entries: [String] = []
        for transfer in transfers {
            var lines = ["url = \(quoted(transfer.url))", "request = \(quoted(transfer.method))"] + transfer.headers.map { "header = \(quoted($0))" }
            if let body = transfer.body {
                let file = directory.appendingPathComponent(transfer.name)
                if !FileManager.default.fileExists(atPath: file.path) { try body.write(to: file) }
                lines += ["header = \"Expect:\"", "data-binary = \(quoted("@" + file.path))"]
            }
            lines += ["output = \"/dev/null\"", "write-out = \"%{http_code}\\n\"", "silent", ""]
            entries.append(lines.joined(separator: "\n"))
        }
        // `next` separates transfers; one after the last would start a transfer without a URL.
        let config = directory.appendingPathComponent("curl.conf")
        try entries.joined(separator: "next\n").write(to: config, atomically: false, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["-K", config.path]
        let output = Pipe()
        process.standardOutput = output
        let (seconds, data) = try timed {
            try process.run()
            let data = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return data
        }
        let codes = String(decoding: data, as: UTF8.self).split(separator: "\n")
        let failed = codes.filter { !$0.hasPrefix("2") }
        guard process.terminationStatus == 0, codes.count == transfers.count, failed.isEmpty else {
            throw ValidationError("curl exited \(process.terminationStatus) after \(codes.count) of \(transfers.count) requests, \(failed.count) not 2xx (first: \(failed.first ?? "-"))")
        }
        return seconds
    }
}

extension VdirsyncerPair {
    /// Rewrites every card with the edit; how many.
    func edit(tag: String) throws -> Int {
        let files = try files()
        for file in files {
            let card = try String(contentsOf: file, encoding: .utf8)
            try PushBenchmark.edited(card, tag: tag).write(to: file, atomically: true, encoding: .utf8)
        }
        return files.count
    }
}
