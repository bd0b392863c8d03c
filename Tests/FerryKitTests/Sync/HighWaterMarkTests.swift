import Foundation
import Logging
import Testing
@testable import FerryKit
import FerryTestSupport

/// An `updated-param` store's high-water mark survives its sweeps: a sweep whose pages are all
/// unchanged, or one that fails halfway, leaves the mark where it was, so the next pass is
/// still incremental (asks `since=` the mark) instead of listing everything for ever.
@Suite("The high-water mark and sweeps", .serialized)
struct HighWaterMarkTests {
    @Test func sweepsNeverEraseOrLowerTheMark() throws {
        let server = try TestServer.python("json_pages_server.py", arguments: ["--count", "30"])
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        var store = try configuredStore(kind: "json", url: server.baseURL + "/items", [
            "pagination": "link", "page-size-param": "per_page", "page-size": "10", "updated-param": "since", "version-field": "updated_at",
        ])
        store.reconcileInterval = .zero
        let configuration = FerryConfiguration(global: GlobalConfiguration(databasePath: directory.path("replica.db"), runtimeDirectory: directory.path("run")),
                                               stores: [store])
        func sync() throws -> PassReport {
            let sync = try OneShotSync(configuration: configuration, storeNames: [], logger: Logger(label: "test"))
            return try #require(try sync.run(refresh: .milliseconds(50)) { _ in }.first?.result.get())
        }
        func mark() throws -> String? {
            let cursor = try Shell.sqlite(directory.path("replica.db"), "SELECT cursor FROM ferry_sync_state WHERE store = 'items'").first
            return cursor.flatMap { JSONCollectionCursor(stored: $0) }?.highWater
        }
        _ = try sync()
        let first = try #require(try mark(), "the first sync stores a mark")
        // Every later pass is a due sweep; its pages are all unchanged.
        let sweep = try sync()
        #expect(sweep.reconciliation == .swept(deleted: 0), "\(sweep.summary)")
        #expect(try mark() == first, "a sweep of unchanged pages keeps the mark")
        // A change: the next pass's mark moves on, never back.
        _ = try server.control("/admin/update", method: "POST", body: #"{"ids":[4]}"#)
        _ = try sync()
        let moved = try #require(try mark())
        #expect(JSONCollectionCursor.isNewer(moved, than: first), "\(moved) after \(first)")
        _ = try sync()
        #expect(try mark() == moved)

        // A sweep that fails on its second page, after a change on its first: the mark is
        // neither erased nor lowered, and the next pass after the fault still finds the change.
        _ = try server.control("/admin/update", method: "POST", body: #"{"ids":[2]}"#)
        _ = try server.control("/admin/fail-page", method: "POST", body: #"{"page":2}"#)
        let failing = try OneShotSync(configuration: configuration, storeNames: [], logger: Logger(label: "test"))
        let failed = try #require(failing.run(refresh: .milliseconds(50)) { _ in }.first?.result)
        guard case .failure(let error) = failed else { Issue.record("the sweep passed a failing page: \(failed)"); return }
        #expect(error.kind == .httpStatus(503), "\(error)")
        let afterFailure = try #require(try mark(), "a failed sweep does not erase the mark")
        #expect(afterFailure == moved || JSONCollectionCursor.isNewer(afterFailure, than: moved), "\(afterFailure) is not before \(moved)")
        _ = try server.control("/admin/fail-page", method: "POST", body: #"{"page":0}"#)
        let again = try sync()
        #expect(again.counts.updated + again.counts.inserted >= 1 || afterFailure != moved, "the change is not lost: \(again.summary)")
        #expect(JSONCollectionCursor.isNewer(try #require(try mark()), than: moved))
    }
}
