import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

@Suite("Replica on a full disk")
struct FullDiskTests {
    /// A 2 MB tmpfs fills up mid-pass: the batch fails with `.full`, nothing of it is applied,
    /// the file stays sound, and once the file system is larger the same batch applies.
    @Test func fullDiskIsATypedErrorAndRecoverable() throws {
        let directory = try TemporaryDirectory()
        let mountPoint = directory.path("small")
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        guard Shell.succeeds(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", mountPoint]) else {
            #expect(!isCI, "cannot mount a tmpfs (needs root) for the full-disk test")
            return
        }
        defer { _ = Shell.succeeds(["umount", "-l", mountPoint]) }

        let path = mountPoint + "/replica.db"
        let replica = try ReplicaDatabase(path: path)
        try replica.prepare(StoreDefinition(name: "items"))
        let payload = String(repeating: "x", count: 2_000)
        func batch(_ k: Int) -> ChangeBatch {
            ChangeBatch(changes: (0..<50).map { record("\(k)-\($0)", version: "1", payload) }, cursor: "\(k)")
        }
        var failedBatch: Int?
        for k in 0..<100 {
            do throws(StoreError) {
                _ = try replica.apply(batch(k), to: "items")
            } catch {
                #expect(error.kind == .full, "\(error)")
                #expect(error.store == "items")
                #expect(error.description.contains(path))
                // What a person reads: the store once, the file system to free space on, no
                // statement, no SQLite code, no remote URL (it named the store twice and
                // ended `in COMMIT [SQLite 13]`, with no hint).
                let pass = SyncError(error, store: "items", url: "https://api.example.com/x?filter=a%20b").description
                #expect(pass.contains("df -h \(mountPoint)"), "\(pass)")
                #expect(pass.components(separatedBy: "items").count == 2, "\(pass)")
                #expect(!pass.contains("[SQLite") && !pass.contains("COMMIT") && !pass.contains("%20"), "\(pass)")
                failedBatch = k
                break
            }
        }
        let failed = try #require(failedBatch, "2 MB never filled up")
        #expect(failed > 0)
        // Nothing of the failed batch, everything of the ones before.
        #expect(try replica.integrityCheck() == "ok")
        #expect(try replica.syncState(of: "items")?.cursor == "\(failed - 1)")
        #expect(try replica.recordCount(of: "items") == 50 * failed)
        #expect(try replica.changeLogCount() == 50 * failed)

        // Space comes back: the same batch now applies on the same connection.
        try #require(Shell.succeeds(["mount", "-o", "remount,size=64m", mountPoint]))
        let counts = try replica.apply(batch(failed), to: "items")
        #expect(counts.inserted == 50)
        #expect(try replica.syncState(of: "items")?.cursor == "\(failed)")
        replica.close()
        let reopened = try ReplicaDatabase(path: path)
        #expect(try reopened.integrityCheck() == "ok")
        #expect(try reopened.recordCount(of: "items") == 50 * (failed + 1))
        reopened.close()
    }
}
