import Foundation
import Logging
import FerryTestSupport
import Testing
@testable import FerryKit

/// The scheduler driven by hand: a clock the test moves, passes the test finishes.
@Suite("Scheduler")
struct SchedulerTests {
    static func configuration(_ stores: [StoreConfiguration], maxConcurrent: Int = 4) -> FerryConfiguration {
        var global = GlobalConfiguration(databasePath: "/nonexistent/ferry.db", runtimeDirectory: "/nonexistent")
        global.maxConcurrentPasses = maxConcurrent
        global.stuckPassTimeout = .seconds(600)
        return FerryConfiguration(global: global, stores: stores)
    }

    static func store(_ name: String, priority: StorePriority = .normal, url: String? = nil, interval: Duration = .seconds(300),
                      jitter: Duration = .seconds(30)) -> StoreConfiguration {
        var store = StoreConfiguration(name: name, url: url ?? "https://example.com/\(name)", options: JSONCollectionOptions(),
                                       location: ConfigurationLocation(file: "test", line: 1))
        store.priority = priority
        store.interval = interval
        store.jitter = jitter
        return store
    }

    static func report(_ store: String) -> PassReport { PassReport(store: store, pass: 0, trigger: .scheduled) }

    static func failure(_ store: String, _ kind: SyncError.Kind, retryAfter: Duration? = nil) -> SyncError {
        SyncError(kind, store: store, message: "test failure", retryAfter: retryAfter)
    }

    @Test func everyStoreStartsAtOnce_inPriorityOrder_andTheRestWaitForRoom() {
        let environment = FakeSchedulerEnvironment()
        let scheduler = Scheduler(configuration: Self.configuration([Self.store("low", priority: .low), Self.store("normal"),
                                                                     Self.store("high", priority: .high)], maxConcurrent: 1),
                                  environment: environment, logger: Logger(label: "test"))
        scheduler.start()
        // One slot: two handed over (one runs, one queued in the environment), one waits here.
        #expect(environment.started.map(\.request.store.name) == ["high", "normal"])
        #expect(environment.started.allSatisfy { $0.request.trigger == .onDemand })
        environment.started[0].finish(.success(Self.report("high")))
        #expect(environment.started.map(\.request.store.name) == ["high", "normal", "low"])
    }

    @Test func aSuccessIsDueAfterItsIntervalAndJitter() throws {
        let environment = FakeSchedulerEnvironment()
        environment.unit = 0.5
        let scheduler = Scheduler(configuration: Self.configuration([Self.store("a", interval: .seconds(60), jitter: .seconds(10))]),
                                  environment: environment, logger: Logger(label: "test"))
        scheduler.start()
        let start = environment.now
        environment.started[0].finish(.success(Self.report("a")))
        let next = try #require(scheduler.nextPass(of: "a"))
        #expect(next.at == start + .seconds(65))
        #expect(next.trigger == .scheduled)
        #expect(environment.wakeAt == start + .seconds(65))
        environment.advance(by: .seconds(64), scheduler)
        #expect(environment.started.count == 1)
        environment.advance(by: .seconds(1), scheduler)
        #expect(environment.started.count == 2)
        #expect(environment.started[1].request.trigger == .scheduled)
    }

    /// Measured from the instant a pass was due to the instant it began running, reported at
    /// its end; a pass that never began (cancelled while waiting for a slot) has no delay.
    @Test func eachPassReportsHowLateItBeganRunning() throws {
        let environment = FakeSchedulerEnvironment()
        environment.unit = 0
        let scheduler = Scheduler(configuration: Self.configuration([Self.store("a", interval: .seconds(60))]),
                                  environment: environment, logger: Logger(label: "test"))
        var delays: [(String, PassTrigger, Duration)] = []
        scheduler.onPassStartDelay = { delays.append(($0, $1, $2)) }
        scheduler.start()
        let start = environment.now
        environment.started[0].startedAt = start + .milliseconds(300)
        environment.started[0].finish(.success(Self.report("a")))
        #expect(delays.count == 1)
        #expect(delays.first?.1 == .onDemand)
        #expect(delays.first?.2 == .milliseconds(300))
        // Due at start + 60 s; the daemon got to it 2 s late and a slot freed 0.5 s later.
        environment.advance(by: .seconds(62), scheduler)
        #expect(environment.started.count == 2)
        environment.started[1].startedAt = environment.now + .milliseconds(500)
        environment.started[1].finish(.success(Self.report("a")))
        #expect(delays.count == 2)
        #expect(delays.last?.1 == .scheduled)
        #expect(delays.last?.2 == .milliseconds(2500))
        environment.advance(by: .seconds(60), scheduler)
        environment.started[2].startedAt = nil
        environment.started[2].finish(.failure(SyncError(.cancelled, store: "a", message: "pass cancelled before it started")))
        #expect(delays.count == 2)
    }

    @Test func failuresBackOffExponentially_andPermanentOnesWaitLong() throws {
        let environment = FakeSchedulerEnvironment()
        environment.unit = 0
        var configuration = Self.configuration([Self.store("a"), Self.store("b")])
        configuration.global.backoff.base = .seconds(5)
        let scheduler = Scheduler(configuration: configuration, environment: environment, logger: Logger(label: "test"))
        scheduler.start()
        let t0 = environment.now
        environment.started[0].finish(.failure(Self.failure("a", .httpStatus(500))))
        // Half of 5 s fixed, half random (0 here).
        #expect(scheduler.nextPass(of: "a")?.at == t0 + .milliseconds(2500))
        #expect(scheduler.nextPass(of: "a")?.failures == 1)
        environment.started[1].finish(.failure(Self.failure("b", .unauthorized)))
        #expect(scheduler.nextPass(of: "b")?.at == t0 + .seconds(900))
        environment.advance(by: .milliseconds(2500), scheduler)
        #expect(environment.started.map(\.request.store.name) == ["a", "b", "a"])
        environment.started[2].finish(.failure(Self.failure("a", .httpStatus(500))))
        #expect(scheduler.nextPass(of: "a")?.at == environment.now + .seconds(5))
        #expect(scheduler.snapshot.failing == ["a", "b"])
        #expect(scheduler.snapshot.causes == ["a": "HTTP 500", "b": "credentials refused"])
    }

    @Test func retryAfterHoldsAcrossReloadAndResync() throws {
        let environment = FakeSchedulerEnvironment()
        environment.unit = 0
        let configuration = Self.configuration([Self.store("limited")])
        let scheduler = Scheduler(configuration: configuration, environment: environment, logger: Logger(label: "test"))
        scheduler.start()
        let failedAt = environment.now
        environment.started[0].finish(.failure(Self.failure("limited", .rateLimited, retryAfter: .seconds(7))))
        environment.advance(by: .seconds(2), scheduler)
        // A reload (same configuration) and its resync: the server said 7 s, so not before then.
        scheduler.apply(configuration)
        scheduler.resyncAll()
        #expect(environment.started.count == 1)
        #expect(scheduler.nextPass(of: "limited")?.at == failedAt + .seconds(7))
        #expect(scheduler.nextPass(of: "limited")?.failures == 1, "a reload keeps the store's failures")
        environment.advance(by: .seconds(5), scheduler)
        #expect(environment.started.count == 2)
        #expect(environment.started[1].request.trigger == .onDemand)
    }

    @Test func aReloadThatNamesAnotherRemoteCancelsThePass_andTheCancellationIsNoFailure() throws {
        let environment = FakeSchedulerEnvironment()
        let scheduler = Scheduler(configuration: Self.configuration([Self.store("a"), Self.store("b")]),
                                  environment: environment, logger: Logger(label: "test"))
        scheduler.start()
        let (a, b) = (environment.started[0], environment.started[1])
        // b only syncs less often: its pass goes on. a now reads another URL: its pass stops.
        scheduler.apply(Self.configuration([Self.store("a", url: "https://example.com/other"), Self.store("b", interval: .seconds(900))]))
        #expect(a.cancelled)
        #expect(!b.cancelled)
        a.finish(.failure(SyncError(.cancelled, store: "a", message: "pass cancelled")))
        #expect(scheduler.nextPass(of: "a")?.failures == 0)
        #expect(scheduler.snapshot.failing.isEmpty)
        // It runs again at once, with the new configuration.
        #expect(environment.started.count == 3)
        #expect(environment.started[2].request.store.url == "https://example.com/other")
    }

    @Test func aRemovedStoresPassIsCancelledAndForgotten() {
        let environment = FakeSchedulerEnvironment()
        let scheduler = Scheduler(configuration: Self.configuration([Self.store("a"), Self.store("gone")]),
                                  environment: environment, logger: Logger(label: "test"))
        scheduler.start()
        scheduler.apply(Self.configuration([Self.store("a")]))
        #expect(environment.started[1].cancelled)
        environment.started[1].finish(.failure(SyncError(.cancelled, store: "gone", message: "pass cancelled")))
        #expect(scheduler.nextPass(of: "gone") == nil)
        #expect(scheduler.snapshot.stores == 1)
        #expect(environment.started.count == 2)
    }

    @Test func aResyncDuringAPassRunsItAgainRightAfter() {
        let environment = FakeSchedulerEnvironment()
        let scheduler = Scheduler(configuration: Self.configuration([Self.store("a")]), environment: environment, logger: Logger(label: "test"))
        scheduler.start()
        scheduler.resyncAll()
        #expect(environment.started.count == 1, "one pass per store at a time")
        environment.started[0].finish(.success(Self.report("a")))
        #expect(environment.started.count == 2)
        #expect(environment.started[1].request.trigger == .onDemand)
    }

    @Test func aStuckPassIsCancelledAsAFailure_andOneThatIgnoresItIsWedged() throws {
        let environment = FakeSchedulerEnvironment()
        environment.unit = 0
        let scheduler = Scheduler(configuration: Self.configuration([Self.store("slow"), Self.store("fine")]),
                                  environment: environment, logger: Logger(label: "test"))
        scheduler.start()
        let slow = try #require(environment.started.first { $0.request.store.name == "slow" })
        let fine = try #require(environment.started.first { $0.request.store.name == "fine" })
        fine.lastAdvance = environment.now + .seconds(500)
        // The scheduler asks to be woken when the first pass would become stuck.
        #expect(environment.wakeAt == environment.now + .seconds(600))
        environment.advance(by: .seconds(600), scheduler)
        #expect(slow.cancelled)
        #expect(!fine.cancelled)
        #expect(scheduler.snapshot.wedged.isEmpty)
        environment.advance(by: .seconds(600), scheduler)
        #expect(scheduler.snapshot.wedged == ["slow"], "a pass that ignores its cancellation for a whole timeout")
        slow.finish(.failure(SyncError(.cancelled, store: "slow", message: "pass cancelled")))
        #expect(scheduler.snapshot.wedged.isEmpty)
        #expect(scheduler.snapshot.failing == ["slow"])
        #expect(scheduler.snapshot.causes["slow"] == "transport: stalled")
        // The pass was cancelled, so it recorded nothing: the daemon publishes the failure.
        #expect(scheduler.snapshot.unrecordedFailures["slow"]?.message.contains("stuck-pass-timeout") == true)
    }

    @Test func aFailureTheReplicaCouldNotRecordIsInTheSnapshot_untilTheStoreSucceeds() throws {
        let environment = FakeSchedulerEnvironment()
        environment.unit = 0
        let scheduler = Scheduler(configuration: Self.configuration([Self.store("disk"), Self.store("net")]),
                                  environment: environment, logger: Logger(label: "test"))
        scheduler.start()
        var full = Self.failure("disk", .store(.full))
        full.unrecordedAt = Date(timeIntervalSince1970: 1_800_000_000)
        try #require(environment.started.first { $0.request.store.name == "disk" }).finish(.failure(full))
        try #require(environment.started.first { $0.request.store.name == "net" }).finish(.failure(Self.failure("net", .httpStatus(503))))
        let snapshot = scheduler.snapshot
        #expect(snapshot.failing == ["disk", "net"])
        #expect(snapshot.unrecordedFailures.keys.sorted() == ["disk"], "the replica recorded the other failure itself")
        #expect(snapshot.unrecordedFailures["disk"]?.at == full.unrecordedAt)
        environment.advance(by: .seconds(3600), scheduler)
        try #require(environment.started.last { $0.request.store.name == "disk" }).finish(.success(Self.report("disk")))
        #expect(scheduler.snapshot.unrecordedFailures.isEmpty)
    }

    @Test func localWritesBringAPassForward_butNotPastABackoff() throws {
        let environment = FakeSchedulerEnvironment()
        environment.unit = 0
        let scheduler = Scheduler(configuration: Self.configuration([Self.store("idle", interval: .seconds(3600)), Self.store("busy"),
                                                                     Self.store("failing")]),
                                  environment: environment, logger: Logger(label: "test"))
        scheduler.start()
        func started(_ name: String) -> Int { environment.started.filter { $0.request.store.name == name }.count }
        func finish(_ name: String, _ outcome: Result<PassReport, SyncError>) throws {
            try #require(environment.started.last { $0.request.store.name == name }).finish(outcome)
        }
        try finish("idle", .success(Self.report("idle")))
        try finish("failing", .failure(Self.failure("failing", .httpStatus(503))))
        let backedOff = try #require(scheduler.nextPass(of: "failing")).at
        // "busy" is still running.
        scheduler.passSoon(["idle", "busy", "failing"])
        #expect(started("idle") == 2, "the idle store runs now, not in an hour")
        #expect(started("failing") == 1)
        #expect(scheduler.nextPass(of: "failing")?.at == backedOff, "a failing remote keeps its backoff")
        #expect(started("busy") == 1)
        try finish("busy", .success(Self.report("busy")))
        #expect(started("busy") == 2, "the running store runs again right after")
    }

    /// A quiet account under ferryd costs its discovery per interval: each discovery brings
    /// its collections' passes at once, with the tokens it read (which a pass compares with the
    /// stored one before asking anything), and a collection's own timer is only a fallback.
    @Test func anAccountsDiscoveryBringsItsCollectionsPassesWithTheirTokens() throws {
        let environment = FakeSchedulerEnvironment()
        environment.unit = 0
        let interval = Duration.seconds(60)
        var collections = ["acct__a", "acct__b", "acct__c"].map { Self.store($0, interval: interval) }
        for index in collections.indices { collections[index].account = "acct" }
        let scheduler = Scheduler(configuration: Self.configuration([Self.store("acct", interval: interval)] + collections),
                                  environment: environment, logger: Logger(label: "test"))
        scheduler.start()
        func latest(_ name: String) throws -> FakePass {
            try #require(environment.started.last { $0.request.store.name == name })
        }
        func starts(_ name: String) -> Int { environment.started.filter { $0.request.store.name == name }.count }
        // The first passes: everything due at once, no token yet.
        for name in ["acct", "acct__a", "acct__b", "acct__c"] { try latest(name).finish(.success(Self.report(name))) }
        #expect(environment.started.allSatisfy { $0.request.currentToken == nil })

        for round in 1...3 {
            // The account is due first; its collections are not due on their own by then.
            environment.advance(by: interval, scheduler)
            #expect(starts("acct") == round + 1)
            #expect(starts("acct__a") == round && starts("acct__b") == round && starts("acct__c") == round)
            // Discovery read two tokens (c's server lists none): every collection passes now,
            // each with its own token, once.
            try latest("acct").finish(.success(Self.report("acct")))
            scheduler.accountDiscovered("acct", tokens: ["acct__a": "token-a\(round)", "acct__b": "token-b\(round)"])
            #expect(try latest("acct__a").request.currentToken == "token-a\(round)")
            #expect(try latest("acct__b").request.currentToken == "token-b\(round)")
            #expect(try latest("acct__c").request.currentToken == nil)
            for name in ["acct__a", "acct__b", "acct__c"] {
                #expect(starts(name) == round + 1)
                try latest(name).finish(.success(Self.report(name)))
            }
        }
        // A token is for the pass right after its discovery: a later pass asks the server.
        scheduler.passSoon(["acct__a"])
        #expect(starts("acct__a") == 5)
        #expect(try latest("acct__a").request.currentToken == nil)
        try latest("acct__a").finish(.success(Self.report("acct__a")))

        // Without discovery (the account keeps failing), each collection still passes on its
        // own, at twice its interval.
        environment.advance(by: interval, scheduler)
        try latest("acct").finish(.failure(Self.failure("acct", .httpStatus(503))))
        let before = starts("acct__b")
        environment.advance(by: interval, scheduler)
        #expect(starts("acct__b") == before + 1)
        #expect(try latest("acct__b").request.currentToken == nil)
    }

    @Test func stopCancelsEveryPassAndWaitsForThem() {
        let environment = FakeSchedulerEnvironment()
        let scheduler = Scheduler(configuration: Self.configuration([Self.store("a"), Self.store("b")]),
                                  environment: environment, logger: Logger(label: "test"))
        scheduler.start()
        var drained: Bool?
        scheduler.stop(timeout: .seconds(2)) { drained = $0 }
        #expect(environment.started.allSatisfy { $0.cancelled })
        environment.started[0].finish(.failure(SyncError(.cancelled, store: "a", message: "pass cancelled")))
        #expect(drained == nil)
        environment.started[1].finish(.failure(SyncError(.cancelled, store: "b", message: "pass cancelled")))
        #expect(drained == true)
        #expect(environment.started.count == 2, "nothing starts while stopping")
    }

    @Test func stopGivesUpAtItsTimeout() {
        let environment = FakeSchedulerEnvironment()
        let scheduler = Scheduler(configuration: Self.configuration([Self.store("a")]), environment: environment, logger: Logger(label: "test"))
        scheduler.start()
        var drained: Bool?
        scheduler.stop(timeout: .seconds(2)) { drained = $0 }
        environment.advance(by: .seconds(2), scheduler)
        #expect(drained == false)
    }

    @Test func statusSaysNeverSyncedAndFirstSync_notOk() {
        let environment = FakeSchedulerEnvironment()
        let scheduler = Scheduler(configuration: Self.configuration([Self.store("a"), Self.store("b")], maxConcurrent: 1),
                                  environment: environment, logger: Logger(label: "test"))
        #expect(scheduler.snapshot.neverSynced == ["a", "b"])
        scheduler.start()
        environment.started[0].finish(.success(Self.report("a")))
        #expect(scheduler.snapshot.neverSynced == ["b"])
        #expect(scheduler.snapshot.running == ["b"])
    }
}
