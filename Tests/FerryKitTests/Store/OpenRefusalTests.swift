import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

@Suite("Replica refuses files it must not touch")
struct OpenRefusalTests {
    func expectRefused(_ path: String, kind: StoreError.Kind) throws {
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        do {
            _ = try ReplicaDatabase(path: path)
            Issue.record("opening \(path) must fail with \(kind)")
        } catch {
            #expect(error.kind == kind)
            #expect(error.description.contains(path))
        }
        // Never overwritten, not even the header.
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }

    @Test func foreignSQLiteFile() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("other.db")
        let other = try SQLiteConnection(path: path, mode: .readWriteCreate)
        try other.execute("CREATE TABLE notes(text TEXT); INSERT INTO notes VALUES ('mine')")
        other.close()
        try expectRefused(path, kind: .notFerryDatabase)
        expectStoreError(.notFerryDatabase) { try ReplicaDatabase.openReadOnly(path: path) }
    }

    @Test func notSQLiteAtAll() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("text.db")
        try Data(String(repeating: "hello, this is a text file\n", count: 100).utf8).write(to: URL(fileURLWithPath: path))
        try expectRefused(path, kind: .notFerryDatabase)
    }

    @Test func newerSchema() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("replica.db")
        try ReplicaDatabase(path: path).close()
        let raw = try SQLiteConnection(path: path, mode: .readWrite)
        try raw.execute("UPDATE ferry_meta SET value = '99' WHERE key = 'schema_version'")
        raw.close()
        try expectRefused(path, kind: .newerSchema(found: 99, supported: Migrations.currentVersion))
        expectStoreError(.newerSchema(found: 99, supported: Migrations.currentVersion)) { try ReplicaDatabase.openReadOnly(path: path) }
    }

    @Test func corruptFile() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("replica.db")
        try makeReplicaWithRecords(at: path)
        try damageMiddle(ofReplicaAt: path)
        try expectRefused(path, kind: .corrupt)
        // A reader (`ferry status`) opens it without checking every page first, and the damage
        // shows where it reads it.
        let reader = try ReplicaDatabase.openReadOnly(path: path)
        defer { reader.close() }
        let error = #expect(throws: SQLiteError.self) { try reader.rows(of: "items") }
        #expect(error?.primaryCode == SQLiteError.corrupt.rawValue, "\(String(describing: error))")
    }

    @Test func aPassedCheckOfALargeReplicaStandsForADay() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("replica.db")
        let replica = try ReplicaDatabase(path: path)
        try replica.prepare(StoreDefinition(name: "items"))
        _ = try replica.apply(ChangeBatch(changes: (0..<100).map { record("r\($0)", version: "1") }, cursor: "c"), to: "items")
        replica.close()
        #expect(try !ReplicaDatabase(path: path, deferIntegrityCheckAbove: 0).integrityCheckDeferred, "made here: counts as checked")
        try forgetIntegrityCheck(ofReplicaAt: path)
        func opened(recording date: Date? = nil) throws -> Bool {
            let database = try ReplicaDatabase(path: path, deferIntegrityCheckAbove: 0)
            defer { database.close() }
            if let date { try database.recordIntegrityCheck(at: date) }
            return database.integrityCheckDeferred
        }
        #expect(try opened(recording: Date()), "never checked: due")
        #expect(try !opened(recording: Date() - ReplicaDatabase.integrityCheckEvery - 1), "checked just now: not due")
        #expect(try opened(recording: Date() + 3600), "checked more than a day ago: due")
        #expect(try opened(), "a check dated in the future (the clock was set back): due")
    }

    @Test func aLargeReplicasCheckCanWaitForItsOwner() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("replica.db")
        try makeReplicaWithRecords(at: path)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        // Under the threshold: checked before use, as always.
        let small = try ReplicaDatabase(path: path, deferIntegrityCheckAbove: Int64(size))
        #expect(!small.integrityCheckDeferred)
        small.close()
        try ReplicaDatabase.checkIntegrity(path: path)
        try forgetIntegrityCheck(ofReplicaAt: path)
        // Damaged and over the threshold: it opens, says the check is the owner's, and the
        // owner's check finds the damage.
        try damageMiddle(ofReplicaAt: path)
        let large = try ReplicaDatabase(path: path, deferIntegrityCheckAbove: Int64(size / 2))
        #expect(large.integrityCheckDeferred)
        large.close()
        expectStoreError(.corrupt) { try ReplicaDatabase.checkIntegrity(path: path) }
    }

    @Test func emptyFileBecomesAReplica() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("empty.db")
        #expect(FileManager.default.createFile(atPath: path, contents: Data()))
        let replica = try ReplicaDatabase(path: path)
        #expect(try replica.integrityCheck() == "ok")
        replica.close()
        // And it opens again as a Ferry replica, read-only too.
        let reader = try ReplicaDatabase.openReadOnly(path: path)
        #expect(try reader.syncStates() == [])
    }

    @Test func readOnlyOfMissingFileFails() throws {
        let directory = try TemporaryDirectory()
        #expect(throws: StoreError.self) { try ReplicaDatabase.openReadOnly(path: directory.path("missing.db")) }
        #expect(!FileManager.default.fileExists(atPath: directory.path("missing.db")))
    }
}

@Suite("Replica open failures say why")
struct ReplicaOpenDiagnosisTests {
    @Test func aMissingDirectoryIsNamed() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("missing/sub/replica.db")
        let error = #expect(throws: StoreError.self) { try ReplicaDatabase(path: path) }
        #expect(error?.message == "the directory \(directory.path("missing/sub")) does not exist", "\(String(describing: error))")
        #expect(error?.kind == .readOnly)
    }

    @Test func aReadOnlyMountIsNamed() throws {
        let directory = try TemporaryDirectory()
        let mountPoint = directory.path("ro")
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        guard Shell.succeeds(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", mountPoint]) else {
            // Mounting needs root (CI has it); elsewhere this case cannot be built.
            try #require(!isCI, "cannot mount a read-only tmpfs in CI")
            return
        }
        defer { _ = Shell.succeeds(["umount", mountPoint]) }
        let error = #expect(throws: StoreError.self) { try ReplicaDatabase(path: mountPoint + "/replica.db") }
        #expect(error?.message == "\(mountPoint) is on a read-only file system", "\(String(describing: error))")
    }
}
