import Foundation
import Logging
import Testing
@testable import FerryKit
import FerryTestSupport

/// An API restored from a backup answers older versions than the replica holds: an incremental
/// pass rightly keeps the newer rows (a stale page must not overwrite them), and `ferry resync`
/// makes the replica what the remote holds now, whatever the version order says.
@Suite("A rebuild writes what differs")
struct RebuildVersionTests {
    @Test func aVersionThatWentBackIsWrittenByARebuild() throws {
        var collection = try PageDigestTests.Collection()
        for id in 1...20 { collection.versions[id] = 5 }
        try collection.write()
        let store = try collection.store()
        _ = try collection.sync(store)
        // Restored from a backup: record 3 is back at version 2, with the text it had then.
        collection.versions[3] = 2
        try collection.write()
        let incremental = try collection.sync(store, sweep: true)
        #expect(incremental.counts.updated == 0, "an older version does not overwrite a pass's rows: \(incremental.summary)")
        let configuration = FerryConfiguration(global: GlobalConfiguration(databasePath: collection.database, runtimeDirectory: collection.directory.path("run")),
                                               stores: [store])
        let sync = try OneShotSync(configuration: configuration, storeNames: [], logger: Logger(label: "test"))
        sync.resync = true
        let rebuilt = try #require(try sync.run(refresh: .milliseconds(50)) { _ in }.first?.result.get())
        #expect(rebuilt.counts.updated == 1, "\(rebuilt.summary)")
        #expect(try collection.query("SELECT version, json_extract(body, '$.title') FROM items WHERE id = 'r3'") == ["2|record 3 v2"])
    }

    /// A record whose body changed at the version the replica holds (an edit inside a coarse
    /// stamp that an earlier Ferry missed) is written by a rebuild too; an unchanged one is not.
    @Test func aBodyThatChangedAtTheSameVersionIsWrittenByARebuild() throws {
        let directory = try TemporaryDirectory()
        let replica = try ReplicaDatabase(path: directory.path("replica.db"))
        defer { replica.close() }
        try replica.prepare(StoreDefinition(name: "items"))
        _ = try replica.apply(ChangeBatch(changes: [record("a", version: "7", "first"), record("b", version: "7")], cursor: "c"), to: "items")
        var rebuild = ChangeBatch(changes: [record("a", version: "7", "second"), record("b", version: "7")], cursor: "c")
        rebuild.rebuilds = true
        let counts = try replica.apply(rebuild, to: "items")
        #expect(counts.updated == 1 && counts.unchanged == 1, "\(counts)")
        #expect(try Shell.sqlite(directory.path("replica.db"), "SELECT json_extract(body, '$.value') FROM items WHERE id = 'a'") == ["second"])
    }
}
