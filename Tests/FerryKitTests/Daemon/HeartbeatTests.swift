import Foundation
import Logging
import Testing
@testable import FerryKit
import FerryTestSupport

/// Heartbeats: when they are pinged (a table), how they are configured, and pings reaching a
/// real HTTP server.
@Suite("Heartbeats")
struct HeartbeatTests {
    static let start = ContinuousClock.now
    static let minute = Duration.seconds(60)

    @Test func theSchedule() {
        typealias Ping = HeartbeatSchedule.Ping
        let rows: [(last: Ping?, healthy: Bool, after: Duration, pings: Bool)] = [
            (nil, true, .zero, true),
            (nil, false, .zero, true),
            (Ping(at: Self.start, healthy: true), true, .seconds(58), false),
            // Up to a second early (a tenth of the interval at most): a timer set for the
            // interval's end fires on it, never a tick later.
            (Ping(at: Self.start, healthy: true), true, .seconds(59), true),
            (Ping(at: Self.start, healthy: true), true, .seconds(60), true),
            (Ping(at: Self.start, healthy: true), false, .seconds(1), true),
            (Ping(at: Self.start, healthy: false), true, .seconds(1), true),
            (Ping(at: Self.start, healthy: false), false, .seconds(58), false),
            (Ping(at: Self.start, healthy: false), false, .seconds(59), true),
        ]
        for row in rows {
            #expect(HeartbeatSchedule.pings(healthy: row.healthy, last: row.last, now: Self.start + row.after, interval: Self.minute) == row.pings,
                    "\(row)")
        }
        #expect(HeartbeatSchedule.nextPing(after: nil, interval: Self.minute) == nil)
        #expect(HeartbeatSchedule.nextPing(after: Ping(at: Self.start, healthy: true), interval: Self.minute) == Self.start + .seconds(59))
        #expect(HeartbeatSchedule.nextPing(after: Ping(at: Self.start, healthy: true), interval: .seconds(5)) == Self.start + .milliseconds(4500))
        #expect(HeartbeatSchedule.url("https://hc-ping.com/abc", healthy: true) == "https://hc-ping.com/abc")
        #expect(HeartbeatSchedule.url("https://hc-ping.com/abc", healthy: false) == "https://hc-ping.com/abc/fail")
        #expect(HeartbeatSchedule.url("https://hc.example/ping/abc/?rid=1", healthy: false) == "https://hc.example/ping/abc/fail?rid=1")
    }

    @Test func configuredGloballyAndPerStore_byURLOrReference() throws {
        let directory = try TemporaryDirectory()
        let file = directory.path("ferry.conf")
        try Data("https://hc.example/store-check\n".utf8).write(to: URL(fileURLWithPath: directory.path("store-ping")))
        #expect(chmod(directory.path("store-ping"), 0o600) == 0)
        let configuration = try ConfigurationLoader.parse(text: """
            [ferry]
            heartbeat-url = https://hc.example/daemon-check
            heartbeat-interval = 5m

            [store items]
            kind = json
            url = https://api.example.com/items
            heartbeat-url = file:store-ping
            """, file: file, environment: [:])
        let global = try #require(configuration.global.heartbeat)
        #expect(global.url.value == "https://hc.example/daemon-check" && global.interval == .seconds(300))
        #expect(global.target == "https://hc.example")
        #expect(!"\(global.url)".contains("daemon-check"), "the URL is a secret")
        let store = try #require(configuration.stores.first?.heartbeat)
        #expect(store.url.value == "https://hc.example/store-check" && store.interval == HeartbeatConfiguration.defaultInterval)
    }

    @Test func badHeartbeatLinesAreProblemsWithTheirLine() {
        let text = """
            [ferry]
            heartbeat-interval = 1m

            [store items]
            kind = json
            url = https://api.example.com/items
            heartbeat-url = ftp://hc.example/x
            """
        do {
            _ = try ConfigurationLoader.parse(text: text, file: "/etc/ferry/t.conf", environment: [:])
            Issue.record("must be refused")
        } catch {
            let problems = error.problems.map { "\($0.line) \($0.message)" }
            #expect(problems.contains { $0.hasPrefix("2 ") && $0.contains("needs a heartbeat-url") }, "\(problems)")
            #expect(problems.contains { $0.hasPrefix("7 ") && $0.contains("scheme ftp is not allowed") }, "\(problems)")
        }
    }

    @Test func pingsReachTheServer_failAtOnce_andNoMoreOftenThanTheInterval() throws {
        let server = try TestServer.fault()
        defer { server.stop() }
        _ = try server.control("/stats/reset")
        let pinger = HeartbeatPinger(logger: Logger(label: "test"))
        let heartbeat = HeartbeatConfiguration(url: Secret(server.baseURL + "/hc/check", source: "test"), interval: Self.minute)
        func counts() throws -> [String: Int] {
            let stats = try JSONSerialization.jsonObject(with: try server.control("/stats")) as? [String: Any]
            return stats?["paths"] as? [String: Int] ?? [:]
        }
        func settle(until expected: [String: Int]) throws {
            let deadline = Date() + 10
            while try counts() != expected, Date() < deadline {
                RunLoop.current.run(until: Date() + 0.05)
            }
            // Answers arrive on this thread's loop; let the last one land.
            RunLoop.current.run(until: Date() + 0.1)
        }
        let now = ContinuousClock.now
        pinger.report(.daemon, healthy: true, to: heartbeat, now: now)
        try settle(until: ["/hc/check": 1])
        pinger.report(.daemon, healthy: true, to: heartbeat, now: now + .seconds(30))     // within the interval
        pinger.report(.daemon, healthy: false, to: heartbeat, now: now + .seconds(31))    // health changed: at once
        try settle(until: ["/hc/check": 1, "/hc/check/fail": 1])
        pinger.report(.daemon, healthy: false, to: heartbeat, now: now + .seconds(40))    // within the interval
        pinger.report(.store("items"), healthy: true, to: heartbeat, now: now + .seconds(40)) // another owner
        try settle(until: ["/hc/check": 2, "/hc/check/fail": 1])
        pinger.report(.daemon, healthy: false, to: heartbeat, now: now + .seconds(92))    // interval over
        try settle(until: ["/hc/check": 2, "/hc/check/fail": 2])
        #expect(try counts() == ["/hc/check": 2, "/hc/check/fail": 2])
    }
}
