import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// A JSON record body for tests.
func record(_ id: String, version: String, _ value: String = "v") -> RecordChange {
    .upsert(RemoteRecord(id: id, version: version, body: Data(#"{"id":"\#(id)","value":"\#(value)"}"#.utf8)))
}

/// A closed replica at `path` whose store `items` holds 3,000 records of ~200 bytes in random
/// id order: enough b-tree pages for damage in the middle of the file to hit them.
func makeReplicaWithRecords(at path: String) throws {
    let replica = try ReplicaDatabase(path: path)
    try replica.prepare(StoreDefinition(name: "items"))
    _ = try replica.apply(ChangeBatch(changes: (0..<3_000).map { record(String(format: "%08x", $0 &* 2_654_435_761 % 1_000_003), version: "1", String(repeating: "x", count: 200)) }, cursor: "c"), to: "items")
    replica.close()
}

/// Damages a closed replica as a failing disk would: 32 KiB of garbage over the pages in the
/// middle of the file, the header kept. The kept -wal and -shm go first (the file alone, as
/// copied elsewhere): the -wal could hold intact copies of those pages.
func damageMiddle(ofReplicaAt path: String) throws {
    try? FileManager.default.removeItem(atPath: path + "-wal")
    try? FileManager.default.removeItem(atPath: path + "-shm")
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
    let size = try handle.seekToEnd()
    try handle.seek(toOffset: size / 2)
    try handle.write(contentsOf: Data((0..<(4096 * 8)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }))
    try handle.close()
}

extension ReplicaDatabase {
    /// Every row of a store as id → (version, deleted), for comparing whole states.
    func rows(of store: String) throws -> [String: String] {
        let statement = try connection.prepare("SELECT id, version, deleted FROM \(quoted(store)) ORDER BY id")
        var rows: [String: String] = [:]
        while try statement.step() {
            rows[statement.string(at: 0)!] = statement.string(at: 1)! + (statement.int64(at: 2) != 0 ? "†" : "")
        }
        return rows
    }

    /// The live rows' bodies by id (tombstones left out).
    func liveBodies(of store: String) throws -> [String: String] {
        let statement = try connection.prepare("SELECT id, body FROM \(quoted(store)) WHERE deleted = 0")
        var rows: [String: String] = [:]
        while try statement.step() { rows[statement.string(at: 0)!] = statement.string(at: 1) ?? "" }
        return rows
    }

    func body(of id: String, in store: String) throws -> String? {
        let statement = try connection.prepare("SELECT body FROM \(quoted(store)) WHERE id = ?1")
        try statement.bind(id, at: 1)
        return try statement.step() ? statement.string(at: 0) : nil
    }

    func changeLogCount() throws -> Int { Int(try connection.scalarInt("SELECT count(*) FROM ferry_changes") ?? 0) }
}

/// Runs `python3 -c script args...`, returning stdout; nil when python3 is missing.
func runPython(_ script: String, _ arguments: [String]) throws -> String? {
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

/// Expects `body` to throw a ``StoreError`` of `kind`.
func expectStoreError<T>(_ kind: StoreError.Kind, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> T) {
    let error = #expect(throws: StoreError.self, sourceLocation: sourceLocation) { _ = try body() }
    #expect(error?.kind == kind, "got \(String(describing: error))", sourceLocation: sourceLocation)
}
