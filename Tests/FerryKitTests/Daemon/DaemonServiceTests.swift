import Foundation
import Logging
import Testing
@testable import FerryKit
import FerryTestSupport

/// Every service of the daemon through the one protocol, as ``Daemon`` drives them: configured
/// with what runs, started on a host whose scheduler runs on the fake environment, told of
/// passes, stopped. Each test reads what the service did (what it sent, bound, pinged, asked
/// the scheduler for, or deleted), not that it was called.
@Suite("Daemon services")
struct DaemonServiceTests {
    /// What the daemon offers: a scheduler on ``FakeSchedulerEnvironment`` while it runs.
    final class Host: DaemonServiceHost {
        let environment = FakeSchedulerEnvironment()
        let scheduler: Scheduler
        var running = true
        var global: GlobalConfiguration
        var refreshes = 0

        init(_ configuration: FerryConfiguration) {
            global = configuration.global
            scheduler = Scheduler(configuration: configuration, environment: environment, logger: Logger(label: "test"))
        }

        var runningScheduler: Scheduler? { running ? scheduler : nil }
        func refreshStatus() { refreshes += 1 }
    }

    static func configuration(_ stores: [StoreConfiguration], database: String = "/nonexistent/ferry.db") -> FerryConfiguration {
        var configuration = SchedulerTests.configuration(stores)
        configuration.global.databasePath = database
        return configuration
    }

    static func pushStore(_ name: String) -> StoreConfiguration {
        var store = SchedulerTests.store(name)
        store.writeBack = WriteBackConfiguration(push: true)
        return store
    }

    static func report(_ store: String) -> PassReport { SchedulerTests.report(store) }

    // MARK: - StatusPublisher

    private final class Shown {
        var statuses: [String] = []
        var schedules: [[String: PublishedSchedule.Entry]] = []
        var unrecorded: [[String: UnrecordedFailures.Failure]] = []
        var withdrawn = 0
    }

    @Test func statusShowsRefusedStoresAsFailing_publishesTheRunningSchedule_andWithdrawsItAtStop() throws {
        let shown = Shown()
        let outputs = StatusPublisher.Outputs(status: { shown.statuses.append($0) }, schedule: { shown.schedules.append($0) },
                                              unrecordedFailures: { shown.unrecorded.append($0) }, withdrawSchedule: { shown.withdrawn += 1 })
        let publisher = StatusPublisher(line: StatusLine(databasePath: "r.db"), runtimeDirectory: "/run/ferry", outputs: outputs, logger: Logger(label: "test"))
        var configuration = Self.configuration([SchedulerTests.store("a")])
        let problem = ConfigurationProblem(file: "ferry.conf", line: 7, key: "password", message: "credential missing")
        configuration.refusedStores = [RefusedStore(name: "broken", problems: ConfigurationErrors(problems: [problem]))]
        let host = Host(configuration)

        publisher.configure(configuration)
        publisher.start(host)
        #expect(publisher.isRefreshing)
        host.scheduler.start()
        publisher.publish(host.scheduler.snapshot)
        #expect(shown.unrecorded.last?.keys.sorted() == ["broken"])
        #expect(shown.unrecorded.last?["broken"]?.message.contains("credential missing") == true)

        publisher.tick()
        #expect(shown.schedules.last?["a"]?.running == true, "the running pass of a is in the published schedule")
        host.running = false
        publisher.tick()
        #expect(shown.schedules.count == 1, "a daemon no longer running publishes no schedule")

        publisher.stop()
        #expect(!publisher.isRefreshing)
        #expect(shown.withdrawn == 1)
    }

    // MARK: - MetricsService

    @Test func metricsStartFromTheReplica_countEachPassWithItsNextPass_andForgetRemovedStores() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("ferry.db")
        let replica = try ReplicaDatabase(path: path)
        try replica.prepare(StoreDefinition(name: "a"))
        _ = try replica.apply(ChangeBatch(changes: [record("r1", version: "1"), record("r2", version: "1")], cursor: "c"), to: "a")
        try replica.recordSuccess(of: "a", at: Date(timeIntervalSince1970: 1_900_000_000), counts: MergeCounts())
        replica.close()
        let database = try SharedDatabase(path: path)
        defer { database.close() }
        let metrics = MetricsService(database: database)
        let configuration = Self.configuration([SchedulerTests.store("a"), SchedulerTests.store("b")], database: path)
        let host = Host(configuration)

        metrics.configure(configuration)
        metrics.start(host)
        #expect(metrics.figures.render().contains(#"ferry_records{store="a"} 2"#), "seeded from what the replica recorded")
        host.scheduler.start()
        let pass = try #require(host.environment.started.first { $0.request.store.name == "b" })
        pass.finish(.success(Self.report("b")))
        metrics.passFinished("b", .success(Self.report("b")))
        let text = metrics.figures.render()
        #expect(text.contains(#"ferry_passes_total{store="b",outcome="ok"} 1"#))
        #expect(text.contains(#"ferry_next_pass_timestamp_seconds{store="b"}"#), "the next pass the scheduler set")
        #expect(text.contains("ferry_pass_start_delay_seconds_count{trigger=\"on-demand\"}"), "start delays are counted once started")

        metrics.configure(Self.configuration([SchedulerTests.store("b")], database: path))
        #expect(!metrics.figures.render().contains(#"store="a""#))
    }

    // MARK: - ListenerService

    @Test func listenersBindWhenStarted_followTheConfigurationAfter_andCloseAtStop() throws {
        let figures = DaemonMetrics(databasePath: "/nonexistent/ferry.db")
        let service = ListenerService(figures: figures, environment: [:], logger: Logger(label: "test"),
                                      trigger: { _ in }, passRequest: { _, respond in respond(ListenerAnswer(503, "")) })
        var configuration = Self.configuration([SchedulerTests.store("a")])
        configuration.global.metricsListen = ListenerServiceTests.loopback
        let host = Host(configuration)

        service.configure(configuration)
        #expect(service.ports.isEmpty, "nothing is bound before the daemon is ready")
        service.start(host)
        let first = try #require(service.ports.first)
        #expect(try ListenerTests.curl(["http://127.0.0.1:\(first)/metrics"]).status == "200")

        // A reload that adds a notification address binds it beside the metrics.
        configuration.global.notifyListen = MetricsEndpoint(family: .ipv4, address: "127.0.0.2", port: 0)
        service.configure(configuration)
        #expect(service.ports.count == 2)

        service.stop()
        #expect(service.ports.isEmpty)
        service.configure(configuration)
        #expect(service.ports.isEmpty, "a stopped service binds nothing again")
    }

    // MARK: - DaemonHeartbeats

    @Test func heartbeatsPingAStoresOwnAfterItsPass_notAfterACancelledOne_norOnceStopped() {
        let heartbeats = DaemonHeartbeats(logger: Logger(label: "test"))
        let heartbeat = HeartbeatConfiguration(url: Secret("http://127.0.0.1:1/hc", source: "test"), interval: .seconds(60))
        var watched = SchedulerTests.store("watched")
        watched.heartbeat = heartbeat
        let configuration = Self.configuration([watched, SchedulerTests.store("other"), SchedulerTests.store("later")])
        heartbeats.configure(configuration)
        heartbeats.start(Host(configuration))
        #expect(heartbeats.storeHeartbeats.keys.sorted() == ["watched"])

        heartbeats.passFinished("watched", .failure(SyncError(.cancelled, store: "watched", message: "cancelled")))
        #expect(heartbeats.pinger.nextPing(of: .store("watched"), interval: heartbeat.interval) == nil, "a cancelled pass says nothing")
        heartbeats.passFinished("watched", .success(Self.report("watched")))
        #expect(heartbeats.pinger.nextPing(of: .store("watched"), interval: heartbeat.interval) != nil)

        var configured = configuration
        configured.stores[2].heartbeat = heartbeat
        heartbeats.configure(configured)
        heartbeats.stop()
        heartbeats.passFinished("later", .success(Self.report("later")))
        heartbeats.daemon(healthy: true, heartbeat: heartbeat)
        #expect(heartbeats.pinger.nextPing(of: .store("later"), interval: heartbeat.interval) == nil)
        #expect(heartbeats.pinger.nextPing(of: .daemon, interval: heartbeat.interval) == nil)
    }

    // MARK: - LocalWriteWatch

    @Test func aLocalWriteToAPushStoreAsksItsPassWithinTheWatch() throws {
        let directory = try TemporaryDirectory()
        let replica = try LocalWriteCaptureTests.seeded(in: directory)
        replica.close()
        let database = try SharedDatabase(path: directory.path("replica.db"))
        defer { database.close() }
        let watch = LocalWriteWatch(database: database, logger: Logger(label: "test"))
        let configuration = Self.configuration([Self.pushStore("quotes"), SchedulerTests.store("plain")])
        let host = Host(configuration)
        watch.configure(configuration)
        #expect(watch.pushStores == ["quotes"])
        watch.start(host)
        #expect(watch.isWatching)
        host.scheduler.start()
        for pass in host.environment.started { pass.finish(.success(Self.report(pass.request.store.name))) }
        watch.tick()
        let before = host.environment.started.count

        let other = try LocalWriteCaptureTests.client(directory)
        try other.execute(#"INSERT INTO quotes(id, body) VALUES ('new', '{"text":"x"}')"#)
        other.close()
        watch.tick()
        #expect(host.environment.started.dropFirst(before).map(\.request.store.name) == ["quotes"])
        watch.tick()
        #expect(host.environment.started.count == before + 1, "one write asks one pass")

        watch.stop()
        #expect(!watch.isWatching)
    }

    // MARK: - ChangeLogPruner

    @Test func thePrunerDeletesWhatIsOlderThanKeepChangesAsItRunsNow() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("ferry.db")
        let replica = try ReplicaDatabase(path: path)
        try replica.prepare(StoreDefinition(name: "items"))
        _ = try replica.apply(ChangeBatch(changes: (0..<10).map { record("r\($0)", version: "1") }, cursor: nil), to: "items")
        replica.close()
        let database = try SharedDatabase(path: path)
        defer { database.close() }
        let pruner = ChangeLogPruner(database: database, logger: Logger(label: "test"))
        let host = Host(Self.configuration([SchedulerTests.store("items")], database: path))

        pruner.start(host)
        #expect(pruner.isScheduled)
        host.global.changeRetention = .seconds(3600)
        #expect(ChangeLogPruner.prune(database, olderThan: host.global.changeRetention, logger: Logger(label: "test")) == 0)
        // A reload's keep-changes applies at the next prune, which runs in the background.
        host.global.changeRetention = .seconds(-3600)
        pruner.tick()
        let deadline = ContinuousClock.now + .seconds(10)
        while try database.write({ try $0.changeLogCount() }) > 0, ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.02)
        }
        #expect(try database.write { try $0.changeLogCount() } == 0)

        pruner.stop()
        #expect(!pruner.isScheduled)
    }

    // MARK: - WatchdogService

    @Test func theWatchdogPingsAtStartAndEachTick_withholdsItForAWedgedPass_andSaysSoOnce() throws {
        var pings = 0
        let watchdog = WatchdogService(period: .seconds(10), ping: { pings += 1 }, logger: Logger(label: "test"))
        let host = Host(SchedulerTests.configuration([SchedulerTests.store("slow")]))
        host.environment.unit = 0
        host.scheduler.start()
        watchdog.start(host)
        #expect(watchdog.isPinging)
        #expect(pings == 1, "the first ping at start")

        let slow = try #require(host.environment.started.first)
        host.environment.advance(by: .seconds(600), host.scheduler)
        host.environment.advance(by: .seconds(600), host.scheduler)
        watchdog.tick()
        watchdog.tick()
        #expect(pings == 1, "no ping while a pass ignores its cancellation")
        #expect(watchdog.reportedStuck == ["slow"])

        slow.finish(.failure(SyncError(.cancelled, store: "slow", message: "pass cancelled")))
        watchdog.tick()
        #expect(pings == 2)
        #expect(watchdog.reportedStuck.isEmpty)

        host.running = false
        watchdog.tick()
        #expect(pings == 2, "a daemon that stopped running pings no more")
        watchdog.stop()
        #expect(!watchdog.isPinging)
    }

    @Test func withoutAWatchdogFromSystemdNothingIsSent() {
        var pings = 0
        let watchdog = WatchdogService(period: nil, ping: { pings += 1 }, logger: Logger(label: "test"))
        let host = Host(SchedulerTests.configuration([]))
        host.scheduler.start()
        watchdog.start(host)
        watchdog.tick()
        #expect(!watchdog.isPinging)
        #expect(pings == 0)
    }
}
