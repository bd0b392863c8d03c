import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

extension FerrydProcessTests {
    /// A store on an hour's interval: a signed GitHub-style notification brings the remote's
    /// change into the replica at once, a forged one changes nothing, and `ferry sync --now`
    /// asks the running ferryd for a pass and returns once the change is in the replica.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: binary("ferryd")), "build ferryd first: swift build"))
    func aSignedNotificationOrSyncNowBringsAChangeAtOnce() throws {
        try seed("Quotes", count: 30)
        let configPath = directory.url.path + "/ferry.conf"
        let port = try Shell.freePort()
        let secret = "notification-secret"
        try (configuration(stores: ["quotes"]).replacingOccurrences(of: "[ferry]\n", with: "[ferry]\nnotify-listen = 127.0.0.1:\(port)\n")
            + "notify = github\nnotify-secret = file:\(directory.url.path)/hook-secret\n")
            .write(toFile: configPath, atomically: true, encoding: .utf8)
        for (file, value) in [("rest-key", "rest-secret"), ("hook-secret", secret)] {
            try value.write(toFile: directory.url.path + "/" + file, atomically: true, encoding: .utf8)
            chmod(directory.url.path + "/" + file, 0o600)
        }
        let runtime = directory.url.path + "/run"
        let daemon = try launch(Self.binary("ferryd"), ["--config", configPath], runtime: runtime)
        defer { if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) } }
        try waitFor("quotes synced") { (try? rows("quotes")) == 30 }

        func post(_ body: String, signature: String?) throws -> String {
            var arguments = ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5", "-X", "POST", "--data-binary", body]
            if let signature { arguments += ["-H", "X-Hub-Signature-256: \(signature)"] }
            return String(decoding: try Shell.run("/usr/bin/curl", arguments + ["http://127.0.0.1:\(port)/notify/quotes"]), as: UTF8.self)
        }
        let body = #"{"action":"created"}"#
        let signature = "sha256=" + SignatureEncoding.hex(HMACSHA256.authenticationCode(key: Array(secret.utf8), message: Array(body.utf8)))

        // Forged: refused, and the hour-long interval holds.
        try seed("Quotes", count: 5)
        #expect(try post(body, signature: "sha256=" + String(repeating: "0", count: 64)) == "403")
        #expect(try post(body, signature: nil) == "401")
        usleep(1_500_000)
        #expect(try rows("quotes") == 30, "a refused notification ran no pass")

        // Signed: the change is read at once.
        #expect(try post(body, signature: signature) == "202")
        try waitFor("the notified change", timeout: 10) { (try? rows("quotes")) == 35 }

        // Asked through the control socket: the answer comes once the pass has ended.
        try seed("Quotes", count: 7)
        let asked = try Shell.outcome(Self.binary("ferry"), ["sync", "--now", "quotes"], environment: ["RUNTIME_DIRECTORY": runtime])
        #expect(asked.status == 0, "\(asked.errors)")
        #expect(asked.output.contains("store quotes: 7 inserted"), "\(asked.output)")
        #expect(try rows("quotes") == 42)

        let unknown = try Shell.outcome(Self.binary("ferry"), ["sync", "--now", "nothing"], environment: ["RUNTIME_DIRECTORY": runtime])
        #expect(unknown.status == FerryExitCode.usage.rawValue)
        #expect(unknown.errors.contains("no store \"nothing\""))

        kill(daemon.processIdentifier, SIGTERM)
        daemon.waitUntilExit()
        let stopped = try Shell.outcome(Self.binary("ferry"), ["sync", "--now", "quotes"], environment: ["RUNTIME_DIRECTORY": runtime])
        #expect(stopped.status == FerryExitCode.unavailable.rawValue)
        #expect(stopped.errors.contains("ferryd is not running"))
    }
}
