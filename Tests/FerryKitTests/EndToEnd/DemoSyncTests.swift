import Foundation
import Logging
import Testing
@testable import FerryKit
import FerryTestSupport

/// The quick start's main job, in-process: the bundled configuration syncs the bundled demo
/// pages into a fresh SQLite file, offline.
@Suite("Demo sync end to end")
struct DemoSyncTests {
    static var defaultConfiguration: String {
        TestServer.repositoryRoot.appendingPathComponent("etc/ferry/ferry.conf").path
    }

    @Test func bundledConfigurationSyncsTheDemoIntoSQLite() throws {
        let directory = try TemporaryDirectory()
        let configuration = try ConfigurationLoader.load(path: Self.defaultConfiguration, environment: [:])
        let database = directory.path("demo.db")
        let sync = try OneShotSync(configuration: configuration, storeNames: [], databasePath: database, logger: Logger(label: "test"))
        let results = sync.run(refresh: .milliseconds(50)) { _ in }
        let report = try #require(try results.first?.result.get())
        #expect(report.counts.inserted > 0)
        #expect(report.pages > 1)

        let count = try Shell.run("/usr/bin/sqlite3", [database, "SELECT count(*) FROM demo"])
        #expect(Int(String(decoding: count, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) == report.counts.inserted)
        let integrity = try Shell.run("/usr/bin/sqlite3", [database, "PRAGMA integrity_check"])
        #expect(String(decoding: integrity, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) == "ok")

        // A second run changes nothing: every version is already stored.
        let again = try OneShotSync(configuration: configuration, storeNames: ["demo"], databasePath: database, logger: Logger(label: "test"))
        let second = try #require(try again.run(refresh: .milliseconds(50)) { _ in }.first?.result.get())
        #expect(second.counts.inserted == 0 && second.counts.updated == 0 && second.counts.deleted == 0)
        #expect(second.recordCount == report.recordCount)
    }

    @Test func aDamagedReplicaFailsEveryStore_checkedBeforeOrBesideThePasses() throws {
        let directory = try TemporaryDirectory()
        let configuration = try ConfigurationLoader.load(path: Self.defaultConfiguration, environment: [:])
        let database = directory.path("demo.db")
        _ = try OneShotSync(configuration: configuration, storeNames: [], databasePath: database, logger: Logger(label: "test"))
            .run(refresh: .milliseconds(50)) { _ in }
        try forgetIntegrityCheck(ofReplicaAt: database)
        try damageMiddle(ofReplicaAt: database)
        // Small: refused before any pass.
        #expect(throws: StoreError.self) {
            _ = try OneShotSync(configuration: configuration, storeNames: [], databasePath: database, logger: Logger(label: "test"))
        }
        // Checked beside the passes (as a large replica is): every store fails with the damage.
        let beside = try OneShotSync(configuration: configuration, storeNames: [], databasePath: database, deferIntegrityCheckAbove: 0,
                                     logger: Logger(label: "test"))
        let results = beside.run(refresh: .milliseconds(50)) { _ in }
        #expect(!results.isEmpty)
        for (store, result) in results {
            guard case .failure(let error) = result else {
                Issue.record("\(store) must fail on a damaged replica")
                continue
            }
            #expect(error.kind == .store(.corrupt), "\(error)")
        }
        #expect(SyncOutcome.exitCode(results.map(\.result)) == .database)
    }

    @Test func unknownStoreNamesTheKnownOnes() throws {
        let directory = try TemporaryDirectory()
        let configuration = try ConfigurationLoader.load(path: Self.defaultConfiguration, environment: [:])
        #expect {
            _ = try OneShotSync(configuration: configuration, storeNames: ["nope"], databasePath: directory.path("x.db"), logger: Logger(label: "test"))
        } throws: { error in
            "\(error)".contains("nope") && "\(error)".contains("demo")
        }
    }
}
