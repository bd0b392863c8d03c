import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// What scripts read: exit codes and `ferry status --json`.
@Suite struct CommandOutcomeTests {
    static func report(_ gaps: [ReplicaGap] = []) -> PassReport {
        var report = PassReport(store: "s", pass: 1, trigger: .onDemand)
        report.gaps = gaps
        return report
    }

    static func failure(_ kind: SyncError.Kind) -> Result<PassReport, SyncError> {
        .failure(SyncError(kind, store: "s", message: "m"))
    }

    @Test func syncExitCodes() {
        #expect(SyncOutcome.exitCode([.success(Self.report()), .success(Self.report())]) == .success)
        #expect(SyncOutcome.exitCode([.success(Self.report()), .success(Self.report([.firstSyncUnfinished]))]) == .incomplete)
        #expect(SyncOutcome.exitCode([.success(Self.report([.firstSyncUnfinished])), Self.failure(.httpStatus(500))]) == .unavailable)
        #expect(SyncOutcome.exitCode([Self.failure(.unauthorized), Self.failure(.cancelled)]) == .interrupted)
        // Several failing stores exit the same way in any order (`wrongurl wrongpass` exited
        // 69 and `wrongpass wrongurl` 77): what the person must fix wins.
        let failures = [Self.failure(.httpStatus(404)), Self.failure(.unauthorized), Self.failure(.busy), Self.failure(.store(.full)),
                        .success(Self.report([.firstSyncUnfinished]))]
        for rotation in failures.indices {
            let order = Array(failures[rotation...] + failures[..<rotation])
            #expect(SyncOutcome.exitCode(order) == .permission)
            #expect(SyncOutcome.exitCode(order.reversed()) == .permission)
        }
        #expect(SyncOutcome.exitCode([Self.failure(.httpStatus(500)), Self.failure(.busy)]) == .unavailable)
        #expect(Set(SyncOutcome.precedence) == Set(FerryExitCode.allCases), "every code has its place")
        // The same failure exits the same way whatever the kind that met it.
        #expect(FerryExitCode.for(SyncError(.malformedResponse, store: "s", message: "m")) == .unavailable)
        #expect(FerryExitCode.for(SyncError(.remote(code: "parse-102"), store: "s", message: "m")) == .unavailable)
        #expect(FerryExitCode.for(SyncError(.httpStatus(500), store: "s", message: "m")) == .unavailable)
        #expect(FerryExitCode.for(SyncError(.store(.full), store: "s", message: "m")) == .database)
        #expect(FerryExitCode.for(SyncError(.badRecord, store: "s", message: "m")) == .dataError)
        #expect(FerryExitCode.interrupted.rawValue == 130 && FerryExitCode.incomplete.rawValue == 2)
    }

    @Test func statusJSONHasEveryKeyAndTheIncompleteState() throws {
        var state = SyncState(store: "a", cursor: nil, lastAttempt: Date(timeIntervalSince1970: 1_800_000_000),
                              lastSuccess: Date(timeIntervalSince1970: 1_800_000_000), recordCount: 3)
        state.incomplete = "refused to delete 80 of 100 records"
        let rows = StoreStatus.collect(configuration: nil, states: [state, SyncState(store: "b")], now: Date(timeIntervalSince1970: 1_800_000_060))
        #expect(rows.map(\.state) == ["incomplete", "never-synced"])
        let json = try #require(String(data: try StoreStatus.makeEncoder().encode(rows[1]), encoding: .utf8))
        for key in ["cursor", "incomplete", "kind", "last_attempt", "last_error", "last_success", "last_success_age_seconds", "pending_records", "records", "state", "store"] {
            #expect(json.contains("\"\(key)\":"), "\(key) missing from \(json)")
        }
        #expect(json.contains(#""last_error":null"#))
        #expect(StoreStatus.table(rows).contains("refused to delete 80 of 100 records"))
    }

    @Test func aFailureTheReplicaCouldNotTakeMakesTheStoreFailing_untilARecordedAttemptSupersedesIt() {
        let synced = Date(timeIntervalSince1970: 1_800_000_000)
        let state = SyncState(store: "disk", lastAttempt: synced, lastSuccess: synced, recordCount: 300)
        let failure = UnrecordedFailures.Failure(at: synced + 60, message: "replica disk is full: store disk: database or disk is full")
        let rows = StoreStatus.collect(configuration: nil, states: [state], unrecorded: ["disk": failure, "gone": failure],
                                       now: synced + 90)
        #expect(rows.map(\.state) == ["failing", "failing"])
        #expect(rows[0].lastError == failure.message && rows[0].lastAttempt == synced + 60 && rows[0].records == 300)
        #expect(rows[0].lastSuccess == synced, "the last success stays what the replica recorded")
        // A later attempt the replica recorded (the disk has room again) wins over the file.
        let later = SyncState(store: "disk", lastAttempt: synced + 120, lastSuccess: synced + 120, recordCount: 600)
        let current = StoreStatus.collect(configuration: nil, states: [later], unrecorded: ["disk": failure], now: synced + 150)
        #expect(current.map(\.state) == ["ok"])
    }

    @Test func unrecordedFailuresArePublishedForOneDatabase_andRemovedWhenNoneIsLeft() throws {
        let directory = try TemporaryDirectory()
        let database = directory.path + "/ferry.db"
        #expect(FileManager.default.createFile(atPath: database, contents: Data()))
        let failure = UnrecordedFailures.Failure(at: Date(timeIntervalSince1970: 1_800_000_000.25), message: "m")
        try UnrecordedFailures(database: database, stores: ["a": failure]).publish(directory: directory.path)
        #expect(UnrecordedFailures.read(directory: directory.path, database: directory.path + "/./ferry.db") == ["a": failure])
        #expect(UnrecordedFailures.read(directory: directory.path, database: directory.path + "/other.db").isEmpty,
                "another replica's failures are not this one's")
        try UnrecordedFailures(database: database, stores: [:]).publish(directory: directory.path)
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/" + UnrecordedFailures.fileName))
        try UnrecordedFailures(database: database, stores: [:]).publish(directory: directory.path)
        #expect(FileManager.default.createFile(atPath: directory.path + "/" + UnrecordedFailures.fileName, contents: Data("{".utf8)))
        #expect(UnrecordedFailures.read(directory: directory.path, database: database).isEmpty, "a malformed file says nothing")
    }
}

@Suite struct LogLevelReloadTests {
    @Test func handlersFollowTheSharedLevelUntilOneIsSetOnThem() {
        let setting = LogLevelSetting(.info)
        var follower = StderrLogHandler(setting: setting, fileDescriptor: -1, priorityPrefix: false)
        var own = JournalLogHandler(identifier: "t", setting: setting)
        own.logLevel = .error
        setting.level = .debug
        #expect(follower.logLevel == .debug)
        #expect(own.logLevel == .error)
        follower.logLevel = .warning
        setting.level = .trace
        #expect(follower.logLevel == .warning)
    }
}
