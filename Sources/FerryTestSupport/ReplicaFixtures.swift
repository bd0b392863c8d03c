import FerryKit
import Foundation

// Replicas and records for tests and benchmarks: a record body, a replica of 3,000 records,
// damage as a failing disk does it, and a Python one-liner's output.

/// A JSON record body for tests.
public func record(_ id: String, version: String, _ value: String = "v") -> RecordChange {
    .upsert(RemoteRecord(id: id, version: version, body: Data(#"{"id":"\#(id)","value":"\#(value)"}"#.utf8)))
}

/// A closed replica at `path` whose store `items` holds 3,000 records of ~200 bytes in random
/// id order: enough b-tree pages for damage in the middle of the file to hit them.
public func makeReplicaWithRecords(at path: String) throws {
    let replica = try ReplicaDatabase(path: path)
    try replica.prepare(StoreDefinition(name: "items"))
    _ = try replica.apply(ChangeBatch(changes: (0..<3_000).map { record(String(format: "%08x", $0 &* 2_654_435_761 % 1_000_003), version: "1", String(repeating: "x", count: 200)) }, cursor: "c"), to: "items")
    replica.close()
}

/// Damages a closed replica as a failing disk would: 32 KiB of garbage over the pages in the
/// middle of the file, the header kept. The kept -wal and -shm go first (the file alone, as
/// copied elsewhere): the -wal could hold intact copies of those pages.
public func damageMiddle(ofReplicaAt path: String) throws {
    try? FileManager.default.removeItem(atPath: path + "-wal")
    try? FileManager.default.removeItem(atPath: path + "-shm")
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
    let size = try handle.seekToEnd()
    try handle.seek(toOffset: size / 2)
    try handle.write(contentsOf: Data((0..<(4096 * 8)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }))
    try handle.close()
}

/// Runs `python3 -c script args...`, returning stdout; nil when python3 is missing.
public func runPython(_ script: String, _ arguments: [String]) throws -> String? {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", "-c", script] + arguments
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.standardError
    do { try process.run() } catch { return nil }
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { return nil }
    return String(decoding: data, as: UTF8.self)
}


/// Makes a closed replica look as if its last integrity check were long ago (or never was):
/// a replica counts as checked when this process made it or checked it at open.
public func forgetIntegrityCheck(ofReplicaAt path: String) throws {
    try Shell.run("/usr/bin/sqlite3", [path, "DELETE FROM ferry_meta WHERE key = 'integrity_checked'"])
}
