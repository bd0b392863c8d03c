import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// `ferryd` as a real process (outside systemd) against the Parse test server: passes land rows,
/// SIGHUP reloads synchronously through `ferry reload`, a broken file keeps the old
/// configuration, SIGTERM exits 0 within 2 s with an intact database.
@Suite("ferryd process", .serialized)
final class FerrydProcessTests {
    let server: TestServer
    let directory: TemporaryDirectory

    init() throws {
        server = try TestServer(executable: "/usr/bin/env", arguments: ["python3", TestServer.repositoryRoot.appendingPathComponent("Tests/Servers/parse_server.py").path, "--port", "0"])
        directory = try TemporaryDirectory()
    }

    deinit {
        server.stop()
    }

    static func binary(_ name: String) -> String {
        TestServer.repositoryRoot.appendingPathComponent(".build/debug/\(name)").path
    }

    func configuration(stores: [String]) -> String {
        var text = """
        [ferry]
        database = \(directory.url.path)/ferry.db

        """
        for store in stores {
            text += """

            [store \(store)]
            kind = parse
            url = \(server.baseURL)/parse
            class = \(store.capitalized)
            application-id = ferry-test
            rest-api-key = file:\(directory.url.path)/rest-key
            interval = 1h
            page-size = 100

            """
        }
        return text
    }

    func seed(_ className: String, count: Int) throws {
        _ = try server.control("/__admin/seed", method: "POST", body: #"{"class":"\#(className)","count":\#(count)}"#)
    }

    func rows(_ table: String) throws -> Int {
        let output = try Shell.run("/usr/bin/sqlite3", ["-cmd", ".timeout 2000", directory.url.path + "/ferry.db", "SELECT count(*) FROM \(table)"])
        return Int(String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    func waitFor(_ what: String, timeout: Double = 30, _ condition: () -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while !condition() {
            if Date() > deadline { throw FerrydTestError.timedOut(what) }
            usleep(100_000)
        }
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: binary("ferryd")), "build ferryd first: swift build"))
    func syncsReloadsAndStopsCleanly() throws {
        try seed("Quotes", count: 250)
        try seed("Notes", count: 40)
        let configPath = directory.url.path + "/ferry.conf"
        try configuration(stores: ["quotes"]).write(toFile: configPath, atomically: true, encoding: .utf8)
        try "rest-secret".write(toFile: directory.url.path + "/rest-key", atomically: true, encoding: .utf8)
        chmod(directory.url.path + "/rest-key", 0o600)
        let runtime = directory.url.path + "/run"

        let daemon = Process()
        daemon.executableURL = URL(fileURLWithPath: Self.binary("ferryd"))
        daemon.arguments = ["--config", configPath]
        var environment = ProcessInfo.processInfo.environment
        environment["RUNTIME_DIRECTORY"] = runtime
        environment.removeValue(forKey: "NOTIFY_SOCKET")
        environment.removeValue(forKey: "JOURNAL_STREAM")
        daemon.environment = environment
        let stderr = Pipe()
        daemon.standardError = stderr
        try daemon.run()
        defer { if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) } }

        try waitFor("quotes synced") { (try? rows("quotes")) == 250 }

        // Add a store and reload: `ferry reload` returns once ferryd acknowledged.
        try configuration(stores: ["quotes", "notes"]).write(toFile: configPath, atomically: true, encoding: .utf8)
        let reload = try Shell.run(Self.binary("ferry"), ["reload", "--pid", "\(daemon.processIdentifier)", "--runtime-directory", runtime])
        #expect(String(decoding: reload, as: UTF8.self).contains("reloaded"))
        try waitFor("notes synced") { (try? rows("notes")) == 40 }

        // A broken file: reload fails, the daemon keeps running on the old configuration.
        try "[store broken]\nkind = nope\n".write(toFile: configPath, atomically: true, encoding: .utf8)
        #expect(throws: ShellError.self) {
            try Shell.run(Self.binary("ferry"), ["reload", "--pid", "\(daemon.processIdentifier)", "--runtime-directory", runtime])
        }
        #expect(daemon.isRunning)

        // SIGTERM: exit 0 within 2 s, database intact.
        let stop = Date()
        kill(daemon.processIdentifier, SIGTERM)
        try waitFor("exit", timeout: 5) { !daemon.isRunning }
        let elapsed = Date().timeIntervalSince(stop)
        #expect(daemon.terminationStatus == 0)
        #expect(elapsed < 2.0 + 1.0, "generous margin over the 2 s promise on a loaded machine")
        let integrity = try Shell.run("/usr/bin/sqlite3", [directory.url.path + "/ferry.db", "PRAGMA integrity_check"])
        #expect(String(decoding: integrity, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) == "ok")
        let log = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(log.contains("pass finished"))
        #expect(log.contains("reload failed"))
        #expect(!log.contains("rest-secret"))
    }
}

enum FerrydTestError: Error {
    case timedOut(String)
}
