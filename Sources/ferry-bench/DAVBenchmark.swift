import ArgumentParser
import FerryKit
import Foundation

/// `ferry-bench dav`: Ferry's WebDAV source against vdirsyncer 0.21 on the same Xandikos
/// collection (issue 7's benchmark). Goals: first sync ≥ 8× faster, no-change sync ≥ 15×.
///
/// Needs `pip install xandikos vdirsyncer` in the venv. Ferry's passes go into a counting sink
/// (the source alone; the store's merge is wired in later); vdirsyncer syncs into a vdir.
struct DAVBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dav",
        abstract: "First and no-change sync of N vCards from Xandikos: Ferry vs vdirsyncer."
    )

    @Option(help: "vCards loaded into Xandikos.")
    var cards = 10_000

    @Option(help: "The venv holding xandikos and vdirsyncer.")
    var venv = ProcessInfo.processInfo.environment["FERRY_VENV"] ?? NSHomeDirectory() + "/.cache/ferry/venv"

    @Option(help: "Path of Tests/Servers/dav_servers.py.")
    var script = "Tests/Servers/dav_servers.py"

    @Option(help: "hrefs per multiget REPORT.")
    var batch = 100

    func run() throws {
        let server = try startServer()
        defer {
            server.terminate()
            server.process.waitUntilExit()
        }
        let url = "http://127.0.0.1:\(server.port)/user/contacts/addressbook/"
        print("xandikos on port \(server.port) with \(cards) vCards")

        // Server alone, before anything else touched the collection; again at the end.
        let aloneBefore = try serverAloneFirstSync(url: url)
        var store = StoreConfiguration(name: "bench", kind: .carddav, url: url, location: ConfigurationLocation(file: "bench", line: 1))
        store.options["multiget-batch"] = ConfigurationValue("\(batch)", at: ConfigurationLocation(file: "bench", line: 2))
        let (ferryFirst, first) = try timed { try DAVBenchmarkPass(store: store, cursor: nil).runToCompletion() }
        guard first.error == nil, first.records == cards else {
            throw ValidationError("Ferry first sync failed: \(first.error.map(String.init(describing:)) ?? "\(first.records) records")")
        }
        let (ferryAgain, again) = try timed { try DAVBenchmarkPass(store: store, cursor: first.cursor).runToCompletion() }
        guard again.error == nil, again.records == 0, again.outcome?.unchanged == true else {
            throw ValidationError("Ferry no-change sync was not a no-op")
        }
        print(String(format: "ferry      first %.2f s (%d records, %d requests), no-change %.3f s (%d request)",
                     ferryFirst, first.records, first.outcome?.requests ?? 0, ferryAgain, again.outcome?.requests ?? 0))

        let work = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-vdirsyncer-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: work) }
        let config = try writeVdirsyncerConfig(in: work, url: url)
        try vdirsyncer(config, ["discover"])
        let (vdirFirst, _) = try timed { try vdirsyncer(config, ["sync"]) }
        let synced = try FileManager.default.contentsOfDirectory(atPath: work.appendingPathComponent("vdir").path).count
        let (vdirAgain, _) = try timed { try vdirsyncer(config, ["sync"]) }
        print(String(format: "vdirsyncer first %.2f s (%d files), no-change %.3f s", vdirFirst, synced, vdirAgain))
        print(String(format: "ratio      first %.1f× (goal ≥ 8×), no-change %.1f× (goal ≥ 15×)", vdirFirst / ferryFirst, vdirAgain / ferryAgain))

        // What the server alone needs for a first sync: curl sending the same requests (the
        // sync report, then every card by multiget), answers dropped. No client can beat it, so
        // vdirsyncer's time over it bounds the first-sync ratio any client can reach here.
        let aloneAfter = try serverAloneFirstSync(url: url)
        let alone = min(aloneBefore.seconds, aloneAfter.seconds)
        print(String(format: "server     first %.2f s (curl, sequential: 1 sync report + %d multigets, nothing parsed; %.2f s before the runs, %.2f s after)",
                     alone, aloneBefore.requests - 1, aloneBefore.seconds, aloneAfter.seconds))
        print(String(format: "bound      vdirsyncer / server alone = %.1f×: the first-sync ratio a client that only waits for the server would reach",
                     vdirFirst / alone))
    }

    /// Times curl issuing a first sync's requests on one keep-alive connection. Card hrefs
    /// follow dav_servers.py's naming (`card-<i>.vcf`).
    private func serverAloneFirstSync(url: String) throws -> (seconds: Double, requests: Int) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-dav-alone-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // The collection's path with its trailing slash (URL.path drops it).
        let path = String(url.drop(while: { $0 != "/" }).dropFirst(2).drop(while: { $0 != "/" }))
        var bodies = [#"<?xml version="1.0" encoding="utf-8"?><D:sync-collection xmlns:D="DAV:"><D:sync-token/><D:sync-level>1</D:sync-level><D:prop><D:getetag/></D:prop></D:sync-collection>"#]
        for start in stride(from: 0, to: cards, by: batch) {
            let hrefs = (start..<min(start + batch, cards)).map { "<D:href>\(path)card-\($0).vcf</D:href>" }.joined()
            bodies.append(#"<?xml version="1.0" encoding="utf-8"?><C:addressbook-multiget xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:carddav"><D:prop><D:getetag/><C:address-data/></D:prop>"# + hrefs + "</C:addressbook-multiget>")
        }
        var entries: [String] = []
        for (index, body) in bodies.enumerated() {
            let file = directory.appendingPathComponent("request-\(index).xml")
            try body.write(to: file, atomically: false, encoding: .utf8)
            entries.append("""
                url = "\(url)"
                request = "REPORT"
                header = "Depth: \(index == 0 ? 0 : 1)"
                header = "Content-Type: application/xml; charset=utf-8"
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
        return (try CoreBenchmark.curl(["-K", configFile.path]), bodies.count)
    }

    private func timed<T>(_ body: () throws -> T) rethrows -> (Double, T) {
        let start = ContinuousClock.now
        let value = try body()
        let elapsed = ContinuousClock.now - start
        return (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18, value)
    }

    private struct Server {
        let process: Process
        let port: Int
        func terminate() { process.terminate() }
    }

    private func startServer() throws -> Server {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script, "--server", "xandikos", "--cards", "\(cards)", "--events", "0"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        var buffer = Data()
        while true {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            buffer.append(chunk)
            for line in String(decoding: buffer, as: UTF8.self).split(separator: "\n") where line.hasPrefix("PORT ") {
                if let port = Int(line.dropFirst(5)) { return Server(process: process, port: port) }
            }
        }
        throw ValidationError("dav_servers.py did not start Xandikos (is it installed in \(venv)?)")
    }

    private func writeVdirsyncerConfig(in directory: URL, url: String) throws -> String {
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("vdir"), withIntermediateDirectories: true)
        let config = """
        [general]
        status_path = "\(directory.path)/status/"

        [pair bench]
        a = "bench_remote"
        b = "bench_local"
        collections = null
        conflict_resolution = "a wins"

        [storage bench_remote]
        type = "carddav"
        url = "\(url)"

        [storage bench_local]
        type = "filesystem"
        path = "\(directory.path)/vdir/"
        fileext = ".vcf"
        """
        let path = directory.appendingPathComponent("config").path
        try config.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    private func vdirsyncer(_ config: String, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: venv + "/bin/vdirsyncer")
        process.arguments = ["-c", config] + arguments
        process.standardOutput = FileHandle.nullDevice
        let input = Pipe()
        process.standardInput = input
        try process.run()
        // discover may ask questions; answer none.
        try input.fileHandleForWriting.close()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw ValidationError("vdirsyncer \(arguments.joined(separator: " ")) exited \(process.terminationStatus)")
        }
    }
}
