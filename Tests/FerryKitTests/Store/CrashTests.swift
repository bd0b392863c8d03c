import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// The built helper binaries sit next to the test bundle (`.build/debug/`).
func builtProduct(_ name: String) -> String? {
    let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    var directory = URL(fileURLWithPath: executable).deletingLastPathComponent()
    // Inside a bundle directory (macOS-style layout) go up to the build directory.
    while directory.path.contains(".xctest") { directory.deleteLastPathComponent() }
    let candidate = directory.appendingPathComponent(name).path
    return FileManager.default.isExecutableFile(atPath: candidate) ? candidate : nil
}

@Suite("Replica crash safety")
struct CrashTests {
    /// The rows after batches 0...cursor of ferry-store-torture (see its main.swift), as
    /// id → version.
    static func expectedRows(through cursor: Int) -> [String: String] {
        var rows: [String: String] = [:]
        guard cursor >= 0 else { return rows }
        for k in 0...cursor {
            for j in 0..<40 { rows["\(k)-\(j)"] = String(k) }
            if k >= 1 {
                rows["\(k - 1)-0"] = String(k)
                rows["\(k - 1)-1"] = nil
            }
        }
        return rows
    }

    /// Change-log entries after batches 0...cursor: 40 inserts, then 40 + update + delete each.
    static func expectedLogCount(through cursor: Int) -> Int { cursor < 0 ? 0 : 40 + 42 * cursor }

    @Test(.timeLimit(.minutes(2)))
    func sigkillAtRandomMomentsNeverLosesOrDoublesABatch() throws {
        guard let torture = builtProduct("ferry-store-torture") else {
            // `swift build --build-tests` / `swift test` build it; a missing binary must not pass in CI.
            #expect(!isCI, "ferry-store-torture not built next to the test bundle")
            return
        }
        var generator = SystemRandomNumberGenerator()
        var kills = 0
        var maxCursor = -1
        // Six rounds on fresh files keep each file small, so checking stays fast. The first kill
        // of a round lands at a random moment, often while the file is being created and
        // migrated; the others a random moment after the victim says its start-up is over, so
        // they hit batches however slow the machine is.
        for _ in 0..<6 {
            let directory = try TemporaryDirectory()
            let path = directory.path("replica.db")
            var lastCursor = -1
            for attempt in 0..<10 {
                let process = Process()
                let output = Pipe()
                process.executableURL = URL(fileURLWithPath: torture)
                process.arguments = [path]
                process.standardOutput = output
                process.standardError = FileHandle.standardError
                try process.run()
                if attempt > 0 {
                    // Blocks until "ready" (or end of file, if the victim died: checked below).
                    _ = output.fileHandleForReading.availableData
                }
                usleep(UInt32.random(in: 2_000...120_000, using: &generator))
                #expect(process.isRunning, "torture exited on its own (status \(process.terminationStatus))")
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                #expect(process.terminationReason == .uncaughtSignal)
                kills += 1

                let replica = try ReplicaDatabase(path: path)
                #expect(try replica.integrityCheck() == "ok")
                let cursor = try replica.syncState(of: "t")?.cursor.flatMap { Int($0) } ?? -1
                #expect(cursor >= lastCursor, "cursor went backwards")
                lastCursor = cursor
                maxCursor = max(maxCursor, cursor)
                let tableExists = try replica.connection.scalarInt("SELECT count(*) FROM sqlite_schema WHERE name = 't'") == 1
                let rows = tableExists ? try replica.rows(of: "t") : [:]
                #expect(rows == Self.expectedRows(through: cursor), "rows differ from batches 0...\(cursor)")
                let sequences = try replica.changes(after: 0, limit: .max).map(\.sequence)
                #expect(sequences.count == Self.expectedLogCount(through: cursor))
                #expect(sequences == Array(stride(from: Int64(1), through: Int64(sequences.count), by: 1)), "change log has gaps")
                replica.close()
            }
        }
        #expect(kills >= 50)
        // The kills must have hit a process doing real work, not only start-up.
        #expect(maxCursor >= 10)
    }
}
