import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

@Suite("Replica concurrent readers")
struct ConcurrentReaderTests {
    /// Another process (python3's sqlite3 module, as a user's script would be) reads in a loop
    /// while Ferry writes. Each read transaction checks invariants that hold only between
    /// batches: rows = 50 × (cursor + 1), one change-log entry per insert plus one per update,
    /// and the row "0-0" carries the cursor as its version.
    static let reader = """
        import os, sqlite3, sys
        path, done, ready = sys.argv[1], sys.argv[2], sys.argv[3]
        con = sqlite3.connect(path, isolation_level=None, timeout=5)
        reads = bad = 0
        cursors = set()
        while True:
            finished = os.path.exists(done)
            con.execute("BEGIN")
            cursor = con.execute("SELECT cursor FROM ferry_sync_state WHERE store = 'items'").fetchone()[0]
            rows = con.execute("SELECT count(*) FROM items").fetchone()[0]
            log = con.execute("SELECT count(*) FROM ferry_changes").fetchone()[0]
            version = con.execute("SELECT version FROM items WHERE id = '0-0'").fetchone()[0]
            con.execute("COMMIT")
            c = int(cursor)
            if rows != 50 * (c + 1) or log != rows + c or version != str(c):
                bad += 1
                print("BAD cursor=%d rows=%d log=%d version=%s" % (c, rows, log, version), file=sys.stderr)
            cursors.add(c)
            reads += 1
            if reads == 1:
                open(ready, "w").close()
            if finished:
                break
        print(reads, bad, len(cursors))
        """

    @Test func readerNeverSeesAHalfAppliedBatch() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("replica.db")
        let replica = try ReplicaDatabase(path: path)
        try replica.prepare(StoreDefinition(name: "items"))
        func batch(_ k: Int) -> ChangeBatch {
            var changes = (0..<50).map { record("\(k)-\($0)", version: "\(k)") }
            if k > 0 { changes.append(record("0-0", version: "\(k)")) }
            return ChangeBatch(changes: changes, cursor: "\(k)")
        }
        _ = try replica.apply(batch(0), to: "items")

        let done = directory.path("done")
        let ready = directory.path("ready")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", Self.reader, path, done, ready]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.standardError
        do { try process.run() } catch {
            #expect(!isCI, "python3 is needed for the concurrent reader: \(error)")
            return
        }
        let deadline = Date().addingTimeInterval(30)
        while !FileManager.default.fileExists(atPath: ready), process.isRunning, Date() < deadline { usleep(5_000) }
        try #require(FileManager.default.fileExists(atPath: ready), "reader did not start")

        for k in 1...400 { _ = try replica.apply(batch(k), to: "items") }
        #expect(FileManager.default.createFile(atPath: done, contents: nil))
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let numbers = text.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
        try #require(numbers.count == 3, "reader output: \(text)")
        #expect(numbers[1] == 0, "reader saw \(numbers[1]) inconsistent states in \(numbers[0]) reads")
        // The reads really interleaved with the writes.
        #expect(numbers[2] > 1)
        #expect(try replica.integrityCheck() == "ok")
    }
}
