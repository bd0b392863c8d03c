import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

// What reads a replica through its internals (its connection) or records an issue (Testing)
// stays in the test target: FerryTestSupport is built for the release benchmarks too, where
// FerryKit's internals are not visible. The fixtures that need neither are in
// FerryTestSupport's ReplicaFixtures.

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

/// Expects `body` to throw a ``StoreError`` of `kind`.
func expectStoreError<T>(_ kind: StoreError.Kind, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> T) {
    let error = #expect(throws: StoreError.self, sourceLocation: sourceLocation) { _ = try body() }
    #expect(error?.kind == kind, "got \(String(describing: error))", sourceLocation: sourceLocation)
}
