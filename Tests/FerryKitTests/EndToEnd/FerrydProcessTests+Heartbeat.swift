import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

extension FerrydProcessTests {
    /// A dead-man's switch set to the interval sees a ping at least every interval: with
    /// `heartbeat-interval = 2s`, ten seconds hold at least four pings (pings that waited for
    /// the 5 s status tick came every 10 s in the worst case, two in ten seconds).
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: binary("ferryd")), "build ferryd first: swift build"))
    func heartbeatsKeepTheirInterval() throws {
        try seed("Quotes", count: 10)
        let endpoint = try TestServer.fault()
        defer { endpoint.stop() }
        let configPath = directory.url.path + "/ferry.conf"
        try configuration(stores: ["quotes"]).replacingOccurrences(of: "[ferry]\n", with: "[ferry]\nheartbeat-url = \(endpoint.baseURL)/small\nheartbeat-interval = 2s\n")
            .write(toFile: configPath, atomically: true, encoding: .utf8)
        try "rest-secret".write(toFile: directory.url.path + "/rest-key", atomically: true, encoding: .utf8)
        chmod(directory.url.path + "/rest-key", 0o600)
        let daemon = try launch(Self.binary("ferryd"), ["--config", configPath], runtime: directory.url.path + "/run")
        defer { if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) } }

        func pings() throws -> Int {
            let stats = try JSONSerialization.jsonObject(with: endpoint.control("/stats")) as? [String: Any]
            return (stats?["paths"] as? [String: Int])?["/small"] ?? 0
        }
        try waitFor("the first ping") { (try? pings()) ?? 0 > 0 }
        let before = try pings()
        Thread.sleep(forTimeInterval: 10)
        let seen = try pings() - before
        #expect(seen >= 4, "\(seen) pings in 10 s at heartbeat-interval = 2s")
        kill(daemon.processIdentifier, SIGTERM)
        try waitFor("exit", timeout: 5) { !daemon.isRunning }
    }
}
