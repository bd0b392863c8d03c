import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

extension FerrydProcessTests {
    /// Starts `executable` (ferryd, or what execs it) as outside systemd: its runtime directory
    /// in the test's, no notify socket or journal, stderr discarded unless a pipe is given.
    func launch(_ executable: String, _ arguments: [String], runtime: String, standardError: Pipe? = nil) throws -> Process {
        let daemon = Process()
        daemon.executableURL = URL(fileURLWithPath: executable)
        daemon.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["RUNTIME_DIRECTORY"] = runtime
        environment.removeValue(forKey: "NOTIFY_SOCKET")
        environment.removeValue(forKey: "JOURNAL_STREAM")
        daemon.environment = environment
        if let standardError { daemon.standardError = standardError } else { daemon.standardError = FileHandle.nullDevice }
        try daemon.run()
        return daemon
    }

    static var promtool: String? {
        ["/usr/bin/promtool", "/usr/local/bin/promtool"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// ferryd serves what its passes did on `metrics-listen`, in a form `promtool check
    /// metrics` accepts, and a reload that moves `metrics-listen` moves the listener;
    /// `ferry status` shows its schedule while it runs.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: binary("ferryd")), "build ferryd first: swift build"))
    func servesPrometheusMetricsOfItsPasses() throws {
        try seed("Quotes", count: 30)
        let configPath = directory.url.path + "/ferry.conf"
        let port = try Shell.freePort()
        func write(port: Int) throws {
            try (configuration(stores: ["quotes"]).replacingOccurrences(of: "[ferry]\n", with: "[ferry]\nmetrics-listen = 127.0.0.1:\(port)\n"))
                .write(toFile: configPath, atomically: true, encoding: .utf8)
        }
        try write(port: port)
        try "rest-secret".write(toFile: directory.url.path + "/rest-key", atomically: true, encoding: .utf8)
        chmod(directory.url.path + "/rest-key", 0o600)
        let runtime = directory.url.path + "/run"
        let daemon = try launch(Self.binary("ferryd"), ["--config", configPath], runtime: runtime)
        defer { if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) } }
        try waitFor("quotes synced") { (try? rows("quotes")) == 30 }

        func scrape(_ port: Int) -> String? {
            (try? Shell.run("/usr/bin/curl", ["-sS", "-f", "--max-time", "5", "http://127.0.0.1:\(port)/metrics"])).map { String(decoding: $0, as: UTF8.self) }
        }
        var text = ""
        try waitFor("the pass in the metrics") {
            text = scrape(port) ?? ""
            return text.contains(#"ferry_passes_total{store="quotes",outcome="ok"} 1"#)
        }
        #expect(text.contains(#"ferry_records_changed_total{store="quotes",change="inserted"} 30"#))
        #expect(text.contains(#"ferry_records{store="quotes"} 30"#))
        #expect(text.contains(#"ferry_store_state{store="quotes",state="ok"} 1"#))
        #expect(text.contains("ferry_replica_size_bytes "))
        let requests = text.split(separator: "\n").first { $0.hasPrefix(#"ferry_requests_total{store="quotes"}"#) }
        #expect(requests.flatMap { Int($0.split(separator: " ").last ?? "") }.map { $0 >= 1 } == true, "\(requests ?? "no requests line")")
        let received = text.split(separator: "\n").first { $0.hasPrefix(#"ferry_received_bytes_total{store="quotes"}"#) }
        #expect(received.flatMap { Int($0.split(separator: " ").last ?? "") }.map { $0 > 1000 } == true, "30 objects are more than 1 kB: \(received ?? "none")")
        #expect(!text.contains("rest-secret"))

        if let promtool = Self.promtool {
            let checked = try Shell.run("/bin/sh", ["-c", "\(promtool) check metrics 2>&1; echo \"exit $?\""], input: Data(text.utf8))
            #expect(String(decoding: checked, as: UTF8.self).hasSuffix("exit 0\n"), "\(String(decoding: checked, as: UTF8.self))")
        } else if ProcessInfo.processInfo.environment["CI"] == "true" {
            Issue.record("promtool is missing (apt install prometheus): CI checks the metrics with it")
        }

        // A reload that moves the listener: the old port stops answering, the new one serves.
        let moved = try Shell.freePort()
        try write(port: moved)
        _ = try Shell.run(Self.binary("ferry"), ["reload", "--pid", "\(daemon.processIdentifier)", "--runtime-directory", runtime])
        try waitFor("the new port") { scrape(moved)?.contains("ferry_passes_total") == true }
        try waitFor("the old port closed", timeout: 5) { scrape(port) == nil }

        // `ferry status` shows the running daemon's schedule; nothing of it once it stopped.
        func status() throws -> [String: Any] {
            let line = try Shell.run(Self.binary("ferry"), ["status", "--json", "--config", configPath, "--runtime-directory", runtime])
            return try #require(try JSONSerialization.jsonObject(with: line) as? [String: Any])
        }
        try waitFor("the schedule published") { (try? status())?["next_pass_in_seconds"] is Int }
        let running = try status()
        #expect(running["syncing"] as? Bool == false)
        #expect((running["next_pass_in_seconds"] as? Int).map { $0 > 3000 && $0 <= 3600 * 12 / 10 } == true, "interval = 1h, jitter at most a tenth: \(running)")
        #expect(running["consecutive_failures"] as? Int == 0)
        #expect(running["backoff_cause"] is NSNull)

        kill(daemon.processIdentifier, SIGTERM)
        try waitFor("exit", timeout: 5) { !daemon.isRunning }
        #expect(daemon.terminationStatus == 0)
        let stopped = try status()
        #expect(stopped["next_pass"] is NSNull && stopped["syncing"] is NSNull, "\(stopped)")
    }

    /// With a socket passed by systemd (socket activation: `LISTEN_FDS`, `LISTEN_PID`, fd 3)
    /// and no `metrics-listen`, ferryd serves on that socket. A few lines of Python pass it as
    /// systemd does: bind, put the socket at fd 3, set the variables, exec ferryd (same pid).
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: binary("ferryd")), "build ferryd first: swift build"))
    func servesMetricsOnASocketSystemdPasses() throws {
        let configPath = directory.url.path + "/ferry.conf"
        try "[ferry]\ndatabase = \(directory.url.path)/ferry.db\n".write(toFile: configPath, atomically: true, encoding: .utf8)
        let port = try Shell.freePort()
        let activate = """
            import os, socket, sys
            s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(16)
            if s.fileno() != 3: os.dup2(s.fileno(), 3)
            os.set_inheritable(3, True)
            os.environ.update(LISTEN_FDS="1", LISTEN_PID=str(os.getpid()))
            os.execv(sys.argv[2], sys.argv[2:])
            """
        let daemon = try launch("/usr/bin/env", ["python3", "-c", activate, "\(port)", Self.binary("ferryd"), "--config", configPath],
                                runtime: directory.url.path + "/run")
        defer { if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) } }
        var text = ""
        try waitFor("metrics on the passed socket", timeout: 20) {
            text = (try? Shell.run("/usr/bin/curl", ["-sS", "-f", "--max-time", "5", "http://127.0.0.1:\(port)/metrics"]))
                .map { String(decoding: $0, as: UTF8.self) } ?? ""
            return text.contains("ferry_stores 0")
        }
        #expect(text.contains("ferry_build_info{version="))
        kill(daemon.processIdentifier, SIGTERM)
        try waitFor("exit", timeout: 5) { !daemon.isRunning }
        #expect(daemon.terminationStatus == 0)
    }
}
