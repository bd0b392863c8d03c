import Foundation
import Logging
import Synchronization
import Testing
@testable import FerryKit
import FerryTestSupport

/// The daemon's listeners as a sender of notifications meets them: a signed notification asks
/// for a pass of its store, a forged or replayed one is refused, counted and changes nothing,
/// and metrics are served on the same server.
@Suite("Listener service")
struct ListenerServiceTests {
    final class Triggers: Sendable {
        let stores = Mutex<[String]>([])
    }

    static func configuration(_ stores: [StoreConfiguration]) -> FerryConfiguration {
        FerryConfiguration(global: GlobalConfiguration(databasePath: "/nonexistent/ferry.db", runtimeDirectory: "/nonexistent"), stores: stores)
    }

    static func store(_ name: String, _ notify: NotificationConfiguration?) -> StoreConfiguration {
        var store = StoreConfiguration(name: name, url: "https://example.com/\(name)", options: JSONCollectionOptions(),
                                       location: ConfigurationLocation(file: "test", line: 1))
        store.notify = notify
        return store
    }

    static let loopback = MetricsEndpoint(family: .ipv4, address: "127.0.0.1", port: 0)

    @Test func aSignedNotificationTriggers_aForgedOneIsRefusedAndCounted_onTheMetricsServer() throws {
        let triggers = Triggers()
        let figures = DaemonMetrics(databasePath: "/nonexistent/ferry.db")
        let service = ListenerService(figures: figures, environment: [:], logger: Logger(label: "test"),
                                      trigger: { store in triggers.stores.withLock { $0.append(store) } },
                                      passRequest: { _, respond in respond(ListenerAnswer(501, "")) })
        let configuration = Self.configuration([
            Self.store("hooks", NotificationConfiguration(scheme: .github, secret: Secret("It's a Secret to Everybody", source: "test"))),
            Self.store("quiet", nil),
        ])
        service.desk.configure(configuration)
        figures.retain(stores: ["hooks", "quiet"])
        // One address for both: the metrics moved onto the notification server.
        service.serve(metrics: Self.loopback, notify: Self.loopback, control: nil)
        defer { service.stop() }
        #expect(service.problem == nil)
        let port = try #require(service.ports.first)
        let base = "http://127.0.0.1:\(port)"
        let signature = "X-Hub-Signature-256: sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"

        #expect(try ListenerTests.curl(["-X", "POST", "-H", signature, "--data-binary", "Hello, World!", "\(base)/notify/hooks"]).status == "202")
        #expect(triggers.stores.withLock { $0 } == ["hooks"])

        // Forged, changed, unsigned; a store without notify; a store that does not exist.
        #expect(try ListenerTests.curl(["-X", "POST", "-H", signature, "--data-binary", "Hello, World?", "\(base)/notify/hooks"]).status == "403")
        #expect(try ListenerTests.curl(["-X", "POST", "--data-binary", "Hello, World!", "\(base)/notify/hooks"]).status == "401")
        #expect(try ListenerTests.curl(["-X", "POST", "-H", signature, "--data-binary", "Hello, World!", "\(base)/notify/quiet"]).status == "404")
        #expect(try ListenerTests.curl(["-X", "POST", "-H", signature, "--data-binary", "Hello, World!", "\(base)/notify/nothing"]).status == "404")
        #expect(triggers.stores.withLock { $0 } == ["hooks"], "nothing but the signed one asked for a pass")

        let (status, metrics) = try ListenerTests.curl(["\(base)/metrics"])
        #expect(status == "200")
        #expect(metrics.contains(#"ferry_notifications_total{store="hooks",result="triggered"} 1"#))
        #expect(metrics.contains(#"ferry_notifications_total{store="hooks",result="wrong_signature"} 1"#))
        #expect(metrics.contains(#"ferry_notifications_total{store="hooks",result="missing_signature"} 1"#))
        #expect(metrics.contains(#"ferry_listener_refused_total{reason="not_found"} 2"#))
        #expect(!metrics.contains(#"ferry_notifications_total{store="quiet""#))
    }

    @Test func metricsAndNotificationsOnTwoAddressesServeOnlyTheirOwnPaths() throws {
        let figures = DaemonMetrics(databasePath: "/nonexistent/ferry.db")
        let service = ListenerService(figures: figures, environment: [:], logger: Logger(label: "test"),
                                      trigger: { _ in }, passRequest: { _, respond in respond(ListenerAnswer(501, "")) })
        let notifyPort = try Shell.freePort()
        service.serve(metrics: Self.loopback, notify: MetricsEndpoint(family: .ipv4, address: "127.0.0.1", port: UInt16(notifyPort)), control: nil)
        defer { service.stop() }
        let metricsPort = try #require(service.ports.first)
        #expect(try ListenerTests.curl(["http://127.0.0.1:\(metricsPort)/metrics"]).status == "200")
        #expect(try ListenerTests.curl(["http://127.0.0.1:\(notifyPort)/metrics"]).status == "404")
        #expect(try ListenerTests.curl(["-X", "POST", "http://127.0.0.1:\(metricsPort)/notify/hooks"]).status == "404")
    }

    @Test func anAddressInUseIsAProblemAndTheRestIsServed() throws {
        let figures = DaemonMetrics(databasePath: "/nonexistent/ferry.db")
        let first = ListenerService(figures: figures, environment: [:], logger: Logger(label: "test"),
                                    trigger: { _ in }, passRequest: { _, respond in respond(ListenerAnswer(501, "")) })
        first.serve(metrics: Self.loopback, notify: nil, control: nil)
        defer { first.stop() }
        let taken = MetricsEndpoint(family: .ipv4, address: "127.0.0.1", port: UInt16(try #require(first.ports.first)))
        let second = ListenerService(figures: figures, environment: [:], logger: Logger(label: "test"),
                                     trigger: { _ in }, passRequest: { _, respond in respond(ListenerAnswer(501, "")) })
        second.serve(metrics: Self.loopback, notify: taken, control: nil)
        defer { second.stop() }
        #expect(second.problem?.contains("\(taken)") == true)
        #expect(second.ports.count == 1, "the metrics are served although the notification address is taken")
    }

    /// The journal lines a service wrote.
    final class Lines: Sendable {
        let lines = Mutex<[String]>([])
        func handler() -> CollectedLines { CollectedLines(into: self) }
    }

    struct CollectedLines: LogHandler {
        let into: Lines
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            into.lines.withLock { $0.append(event.message.description) }
        }
    }

    @Test func handshakesNeedNoSecret_soAFloodOfThemCostsOneJournalLine() throws {
        let lines = Lines()
        let triggers = Triggers()
        let figures = DaemonMetrics(databasePath: "/nonexistent/ferry.db")
        let service = ListenerService(figures: figures, environment: [:], logger: Logger(label: "test", factory: { _ in lines.handler() }),
                                      trigger: { store in triggers.stores.withLock { $0.append(store) } },
                                      passRequest: { _, respond in respond(ListenerAnswer(501, "")) })
        service.desk.configure(Self.configuration([Self.store("mail", NotificationConfiguration(scheme: .graph, secret: Secret("state", source: "test")))]))
        figures.retain(stores: ["mail"])
        service.serve(metrics: nil, notify: Self.loopback, control: nil)
        defer { service.stop() }
        let port = try #require(service.ports.first)
        for index in 0..<20 {
            let (status, body) = try ListenerTests.curl(["-X", "POST", "http://127.0.0.1:\(port)/notify/mail?validationToken=token\(index)"])
            #expect(status == "200")
            #expect(body == "token\(index)", "Graph's token is echoed every time")
        }
        #expect(lines.lines.withLock { $0 }.filter { $0.contains("handshake") }.count == 1)
        #expect(triggers.stores.withLock { $0 }.isEmpty, "a handshake runs no pass")
    }

    @Test func refusalsAreLoggedOncePerGap_withACountOfTheRest() {
        var log = RefusalLog()
        let start = ContinuousClock.now
        #expect(log.ask(store: "s", reason: NotificationRefusal.wrongSignature.rawValue, now: start, gap: .seconds(10)) == (true, 0))
        for second in 1...5 {
            #expect(log.ask(store: "s", reason: NotificationRefusal.wrongSignature.rawValue, now: start + .seconds(second), gap: .seconds(10)).log == false)
        }
        #expect(log.ask(store: "s", reason: NotificationRefusal.staleTimestamp.rawValue, now: start + .seconds(5), gap: .seconds(10)) == (true, 0))
        #expect(log.ask(store: "s", reason: NotificationRefusal.wrongSignature.rawValue, now: start + .seconds(10), gap: .seconds(10)) == (true, 5))
    }
}
