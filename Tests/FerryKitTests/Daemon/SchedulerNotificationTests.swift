import Foundation
import Logging
import FerryTestSupport
import Testing
@testable import FerryKit

/// A notification makes its store due now, coalesced: however many arrive, one pass runs and
/// at most one waits; the schedule stays as the reconciliation.
@Suite("Scheduler notifications")
struct SchedulerNotificationTests {
    static func scheduler(_ names: [String], maxConcurrent: Int = 4) -> (Scheduler, FakeSchedulerEnvironment) {
        let environment = FakeSchedulerEnvironment()
        environment.unit = 0
        let stores = names.map { SchedulerTests.store($0, interval: .seconds(600), jitter: .zero) }
        let scheduler = Scheduler(configuration: SchedulerTests.configuration(stores, maxConcurrent: maxConcurrent),
                                  environment: environment, logger: Logger(label: "test"))
        return (scheduler, environment)
    }

    static func starts(_ environment: FakeSchedulerEnvironment, _ name: String) -> [FakePass] {
        environment.started.filter { $0.request.store.name == name }
    }

    @Test func anIdleStoreRunsAtOnce_withTheNotificationTrigger_andKeepsItsInterval() throws {
        let (scheduler, environment) = Self.scheduler(["a"])
        scheduler.start()
        environment.started[0].finish(.success(SchedulerTests.report("a")))
        environment.advance(by: .seconds(30), scheduler)
        #expect(scheduler.notified("a") == .due)
        let pass = try #require(Self.starts(environment, "a").last)
        #expect(Self.starts(environment, "a").count == 2)
        #expect(pass.request.trigger == .notified)
        pass.finish(.success(SchedulerTests.report("a")))
        let next = try #require(scheduler.nextPass(of: "a"))
        #expect(next.at == environment.now + .seconds(600), "the schedule goes on as the reconciliation")
        #expect(next.trigger == .scheduled)
    }

    @Test func aThousandNotificationsWhileAPassRunsMakeOneMorePass() throws {
        let (scheduler, environment) = Self.scheduler(["a"])
        scheduler.start()
        var outcomes: [Scheduler.PassAsk: Int] = [:]
        for _ in 0..<1000 { outcomes[scheduler.notified("a"), default: 0] += 1 }
        #expect(outcomes == [.queuedAfterRunning: 1, .coalesced: 999])
        #expect(Self.starts(environment, "a").count == 1)
        environment.started[0].finish(.success(SchedulerTests.report("a")))
        #expect(Self.starts(environment, "a").count == 2)
        #expect(Self.starts(environment, "a")[1].request.trigger == .notified)
        Self.starts(environment, "a")[1].finish(.success(SchedulerTests.report("a")))
        #expect(Self.starts(environment, "a").count == 2, "nothing more: the queued pass read what all of them announced")
    }

    @Test func aStoreDueAndWaitingForASlotIsNotQueuedTwice() {
        let (scheduler, environment) = Self.scheduler(["a", "b", "c"], maxConcurrent: 1)
        scheduler.start()
        // Two handed over (one runs, one queued in the environment), "c" waits here for room.
        #expect(environment.started.map(\.request.store.name) == ["a", "b"])
        #expect(scheduler.notified("c") == .coalesced)
        #expect(scheduler.notified("c") == .coalesced)
        environment.started[0].finish(.success(SchedulerTests.report(environment.started[0].request.store.name)))
        #expect(Self.starts(environment, "c").count == 1)
    }

    @Test func aFailingStoreKeepsItsBackoff_andAnUnknownOneIsSaidSo() throws {
        let (scheduler, environment) = Self.scheduler(["a"])
        scheduler.start()
        environment.started[0].finish(.failure(SchedulerTests.failure("a", .httpStatus(503))))
        let backedOff = try #require(scheduler.nextPass(of: "a")).at
        #expect(scheduler.notified("a") == .backingOff)
        #expect(scheduler.nextPass(of: "a")?.at == backedOff)
        #expect(Self.starts(environment, "a").count == 1)
        #expect(scheduler.notified("nothing") == .unknown)
    }

    @Test func aPersonsRequestOutranksANotificationQueuedBehindARunningPass() throws {
        let (scheduler, environment) = Self.scheduler(["a"])
        scheduler.start()
        #expect(scheduler.notified("a") == .queuedAfterRunning)
        #expect(scheduler.requested("a") == .queuedAfterRunning)
        #expect(scheduler.notified("a") == .coalesced)
        environment.started[0].finish(.success(SchedulerTests.report("a")))
        #expect(try #require(Self.starts(environment, "a").last).request.trigger == .onDemand)
    }

    @Test func otherStoresKeepTheirScheduleWhileOneIsNotifiedOver() throws {
        let (scheduler, environment) = Self.scheduler(["busy", "other"])
        scheduler.start()
        for pass in environment.started { pass.finish(.success(SchedulerTests.report(pass.request.store.name))) }
        let due = try #require(scheduler.nextPass(of: "other")).at
        for _ in 0..<100 {
            scheduler.notified("busy")
            environment.advance(by: .seconds(1), scheduler)
            Self.starts(environment, "busy").last?.finish(.success(SchedulerTests.report("busy")))
        }
        #expect(scheduler.nextPass(of: "other")?.at == due)
    }
}
