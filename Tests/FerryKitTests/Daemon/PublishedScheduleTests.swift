import Foundation
import Logging
import Testing
@testable import FerryKit
import FerryTestSupport

/// What `ferry status` learns of ferryd's schedule: each store's next pass, whether one runs,
/// and its backoff; read only while the daemon that wrote it runs, for its own database.
@Suite struct PublishedScheduleTests {
    @Test func theSchedulerSaysWhenEachStoreIsNext_andWhyOneBacksOff() throws {
        let environment = FakeSchedulerEnvironment()
        environment.unit = 0
        var configuration = SchedulerTests.configuration([SchedulerTests.store("well", interval: .seconds(60)), SchedulerTests.store("sick"),
                                                          SchedulerTests.store("busy")])
        configuration.global.backoff.base = .seconds(10)
        let scheduler = Scheduler(configuration: configuration, environment: environment, logger: Logger(label: "test"))
        scheduler.start()
        func finish(_ name: String, _ outcome: Result<PassReport, SyncError>) throws {
            try #require(environment.started.last { $0.request.store.name == name }).finish(outcome)
        }
        try finish("well", .success(SchedulerTests.report("well")))
        try finish("sick", .failure(SchedulerTests.failure("sick", .httpStatus(503))))
        let wall = Date(timeIntervalSince1970: 1_800_000_000)
        let entries = scheduler.publishedEntries(now: wall)
        #expect(entries["well"] == .init(nextPass: wall + 60, running: false, failures: 0, cause: nil))
        #expect(entries["sick"] == .init(nextPass: wall + 5, running: false, failures: 1, cause: "HTTP 503"))
        #expect(entries["busy"] == .init(nextPass: nil, running: true, failures: 0, cause: nil))
    }

    @Test func theRevisionMovesWithEveryChangeOfPlace_andStandsStillBetween() throws {
        let environment = FakeSchedulerEnvironment()
        environment.unit = 0
        let configuration = SchedulerTests.configuration([SchedulerTests.store("a", interval: .seconds(60)), SchedulerTests.store("b", interval: .seconds(60))])
        let scheduler = Scheduler(configuration: configuration, environment: environment, logger: Logger(label: "test"))
        scheduler.start()
        var seen = scheduler.revision
        func moved() -> Bool {
            defer { seen = scheduler.revision }
            return scheduler.revision != seen
        }
        try #require(environment.started.last { $0.request.store.name == "a" }).finish(.success(SchedulerTests.report("a")))
        #expect(moved(), "a pass finished")
        _ = scheduler.publishedEntries()
        #expect(!moved(), "reading the schedule changes nothing")
        scheduler.resyncAll()
        #expect(moved(), "a resync makes the idle store due")
        scheduler.apply(SchedulerTests.configuration([SchedulerTests.store("a", interval: .seconds(60))]))
        #expect(moved(), "a store removed")
        #expect(scheduler.publishedEntries()["b"] == nil)
    }

    @Test func statusShowsTheScheduleOfARunningDaemon_andNullsWithoutOne() throws {
        let directory = try TemporaryDirectory()
        let database = directory.path("ferry.db")
        #expect(FileManager.default.createFile(atPath: database, contents: Data()))
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let stores: [String: PublishedSchedule.Entry] = [
            "well": .init(nextPass: now + 42, running: false, failures: 0, cause: nil),
            "sick": .init(nextPass: now + 300, running: false, failures: 3, cause: "HTTP 503"),
            "busy": .init(nextPass: nil, running: true, failures: 0, cause: nil),
            "late": .init(nextPass: now - 94, running: false, failures: 0, cause: nil),
            "prompt": .init(nextPass: now - 1, running: false, failures: 0, cause: nil),
        ]
        try PublishedSchedule(database: database, stores: stores).publish(directory: directory.path)
        let read = PublishedSchedule.read(directory: directory.path, database: database)
        #expect(read == stores, "this process wrote it and runs")
        #expect(PublishedSchedule.read(directory: directory.path, database: directory.path("other.db")).isEmpty, "another database's")
        let synced = SyncState(store: "well", lastAttempt: now - 10, lastSuccess: now - 10, recordCount: 5)
        let late = SyncState(store: "late", lastAttempt: now - 154, lastSuccess: now - 154, recordCount: 5)
        let rows = StoreStatus.collect(configuration: nil, states: [synced, SyncState(store: "sick"), SyncState(store: "busy"), late,
                                                                    SyncState(store: "prompt")],
                                       schedule: read, now: now)
        let byName = Dictionary(uniqueKeysWithValues: rows.map { ($0.store, $0) })
        #expect(byName["well"]?.nextPassInSeconds == 42)
        #expect(byName["well"]?.syncing == false)
        #expect(byName["sick"]?.consecutiveFailures == 3 && byName["sick"]?.backoffCause == "HTTP 503")
        #expect(byName["busy"]?.syncing == true && byName["busy"]?.nextPass == nil)
        // Whether ferryd keeps up: a pass due 94 s ago that has not started is late, whatever
        // the last pass left (ok here); one a moment past due is starting now.
        #expect(byName["well"]?.overdueSeconds == 0 && byName["busy"]?.overdueSeconds == 0)
        #expect(byName["late"]?.state == "ok" && byName["late"]?.overdueSeconds == 94 && byName["late"]?.nextPassInSeconds == 0)
        #expect(byName["prompt"]?.overdueSeconds == 1)
        let table = StoreStatus.table(rows)
        #expect(table.contains("in 42s") && table.contains("in 5m (retry 3)") && table.contains("syncing") && table.contains("late 94s"))
        #expect(StoreStatus.next(byName["prompt"]!) == "now")
        let json = String(decoding: try StoreStatus.makeEncoder().encode(byName["sick"]!), as: UTF8.self)
        #expect(json.contains(#""backoff_cause":"HTTP 503""#) && json.contains(#""consecutive_failures":3"#) && json.contains(#""next_pass_in_seconds":300"#))

        // A daemon that is gone: its file says nothing.
        try PublishedSchedule(database: database, pid: Self.deadPID(), stores: stores).publish(directory: directory.path)
        #expect(PublishedSchedule.read(directory: directory.path, database: database).isEmpty)
        let without = StoreStatus.collect(configuration: nil, states: [synced], now: now)
        let bare = String(decoding: try StoreStatus.makeEncoder().encode(without[0]), as: UTF8.self)
        for key in ["next_pass", "next_pass_in_seconds", "syncing", "consecutive_failures", "backoff_cause", "overdue_seconds"] {
            #expect(bare.contains(#""\#(key)":null"#), "\(key) in \(bare)")
        }
        PublishedSchedule.withdraw(directory: directory.path)
        #expect(!FileManager.default.fileExists(atPath: directory.path(PublishedSchedule.fileName)))
    }

    /// Written by hand (every second, for every store), byte for byte what the encoder
    /// writes, whatever the names and causes hold.
    @Test func theFileIsWhatJSONEncoderWrites() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000.25)
        let schedule = PublishedSchedule(database: "/var/lib/ferry/odd \"name\"\\.db", pid: 812, stores: [
            "well": .init(nextPass: now + 42, running: false, failures: 0, cause: nil),
            "sick": .init(nextPass: now + 300, running: false, failures: 3, cause: "HTTP 503: \"down\"\n\tnow\u{1}/ é"),
            "busy": .init(nextPass: nil, running: true, failures: 0, cause: nil),
        ])
        let encoded = String(decoding: try UnrecordedFailures.encoder().encode(schedule), as: UTF8.self) + "\n"
        #expect(schedule.text == encoded)
        #expect(try UnrecordedFailures.decoder().decode(PublishedSchedule.self, from: Data(schedule.text.utf8)) == schedule)
        #expect(PublishedSchedule(database: "/d.db", pid: 1, stores: [:]).text == #"{"database":"/d.db","pid":1,"stores":{}}"# + "\n")
    }

    /// A pid no process has: a child that has exited and been reaped.
    static func deadPID() throws -> Int32 {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/bin/true")
        try child.run()
        child.waitUntilExit()
        return child.processIdentifier
    }
}
