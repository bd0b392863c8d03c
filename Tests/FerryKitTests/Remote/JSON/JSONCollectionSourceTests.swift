import Foundation
import Logging
import Testing
@testable import FerryKit
import FerryTestSupport

/// JSONCollectionSource against json_pages_server.py (Link, next-url and cursor pagination,
/// rate limits, loops), fault_server.py (/etag: conditional requests) and file:// chains.
@Suite(.serialized) struct JSONCollectionSourceTests {
    static func startPages() throws -> TestServer {
        try TestServer.python("json_pages_server.py", arguments: ["--count", "250"])
    }

    static func store(_ url: String, _ options: [String: String], pageSize: Int = 40) throws -> StoreConfiguration {
        try configuredStore(kind: "json", url: url, options.merging(["page-size": "\(pageSize)"]) { $1 })
    }

    /// One pass; `batchTarget` (records per batch) defaults to one page per batch here, so
    /// the tests see page boundaries, with no time-based flush.
    static func sync(_ store: StoreConfiguration, cursor: String? = nil, reconcile: Bool = false, batchTarget: Int = 1,
                     configure: @escaping (CollectingSink, any RemoteSource) -> Void = { _, _ in }) throws -> CollectedPass {
        try SourceRun(store: store, plan: PassPlan(cursor: cursor, reconcile: reconcile), configure: { sink, source in
            let json = source as? JSONCollectionSource
            json?.batchTarget = batchTarget
            json?.maxBatchDelay = .seconds(3600)
            configure(sink, source)
        }).runToCompletion()
    }

    @Test func linkHeaderPagination() throws {
        let server = try Self.startPages()
        let store = try Self.store(server.baseURL + "/link", ["pagination": "link", "page-size-param": "per_page"])
        let pass = try Self.sync(store, reconcile: true)
        #expect(pass.error == nil)
        #expect(pass.records.map(\.id) == (1...250).map(String.init))
        #expect(pass.batches.count == 7)
        #expect(pass.outcome?.listingComplete == true)
        #expect(pass.listed.count == 250)
        #expect(pass.offLoopCalls == 0 && pass.callsAfterEnd == 0)
        // Without updated-param only the last page commits the cursor.
        #expect(pass.batches.dropLast().allSatisfy { $0.cursor == nil })
        let cursor = try #require(pass.finalCursor)
        #expect(cursor.contains("2024-01-01T00:00:00.000250"))
        let body = try JSONSerialization.jsonObject(with: pass.records[0].body) as? [String: Any]
        #expect(body?["name"] as? String == "item 1 é")
    }

    @Test func nextURLPaginationIncrementalByUpdatedParam() throws {
        let server = try Self.startPages()
        let store = try Self.store(server.baseURL + "/nexturl", ["records-path": "items", "pagination": "next-url:next",
                                                           "page-size-param": "per_page", "updated-param": "since", "total-path": "total"])
        let first = try Self.sync(store)
        #expect(first.records.count == 250)
        #expect(first.batches.first?.totalHint == 250)
        #expect(first.batches.allSatisfy { $0.cursor != nil }, "sorted pages commit per page")
        _ = try server.control("/admin/update", method: "POST", body: #"{"ids":[3,77,140]}"#)
        _ = try server.control("/admin/create", method: "POST", body: #"{"count":2}"#)
        let second = try Self.sync(store, cursor: first.finalCursor)
        #expect(second.error == nil)
        #expect(second.records.map(\.id) == ["3", "77", "140", "251", "252"])
        let third = try Self.sync(store, cursor: second.finalCursor)
        #expect(third.records.isEmpty)
        #expect(third.outcome?.requests == 1)
    }

    @Test func cursorTokenPaginationWithNestedPaths() throws {
        let server = try Self.startPages()
        let store = try Self.store(server.baseURL + "/cursor", ["records-path": "data.rows", "pagination": "cursor:after=meta.next_token",
                                                          "page-size-param": "limit"], pageSize: 100)
        let pass = try Self.sync(store)
        #expect(pass.error == nil)
        #expect(pass.records.count == 250)
        #expect(Set(pass.records.map(\.id)).count == 250)
        #expect(pass.outcome?.requests == 3)
    }

    @Test func rateLimitsBecomeRetryAfter() throws {
        let server = try Self.startPages()
        let limited = try Self.sync(try Self.store(server.baseURL + "/ratelimited", ["pagination": "none"]))
        #expect(limited.error?.kind == .rateLimited)
        #expect(limited.error?.retryAfter == .seconds(3))
        #expect(limited.batches.isEmpty)
        // A 200 page that exhausts the window: the page is merged, then the pass waits.
        let exhausted = try Self.sync(try Self.store(server.baseURL + "/exhausted", ["pagination": "link", "page-size-param": "per_page"]))
        #expect(exhausted.batches.count == 1)
        #expect(exhausted.error?.kind == .rateLimited)
        let wait = try #require(exhausted.error?.retryAfter)
        #expect(wait > .zero && wait <= .seconds(6))
    }

    @Test func paginationLoopIsMalformed() throws {
        let server = try Self.startPages()
        let pass = try Self.sync(try Self.store(server.baseURL + "/loop", ["records-path": "items", "pagination": "next-url:next"]))
        #expect(pass.error?.kind == .malformedResponse)
        #expect(pass.error?.message.contains("loops") == true)
        #expect(pass.batches.isEmpty)
    }

    /// A chain of two pages, the second linking back to the first: the error names the page
    /// it loops back to (the one to look at on the server), then where the link was found.
    @Test func aLoopNamesThePageItLoopsBackTo() throws {
        let server = try Self.startPages()
        let pass = try Self.sync(try Self.store(server.baseURL + "/loop2?step=1", ["records-path": "items", "pagination": "next-url:next"]))
        let error = try #require(pass.error)
        #expect(error.kind == .malformedResponse)
        #expect(error.description.contains("pagination loops back to \(server.baseURL)/loop2?step=1 (\(server.baseURL)/loop2?step=2)"), "\(error)")
    }

    @Test func conditionalRequestCostsOne304() throws {
        let server = try TestServer.fault()
        // /etag's body is not a collection, so the first pass fails to parse it; the validators
        // are what matters: give the pass a cursor carrying them as a previous pass would.
        let url = server.baseURL + "/etag"
        let store = try Self.store(url, ["pagination": "none"])
        var cursor = JSONCollectionCursor(highWater: "5", etag: "\"v1\"", firstURL: url)
        _ = try server.control("/stats/reset")
        let pass = try Self.sync(store, cursor: cursor.stored)
        #expect(pass.error == nil)
        #expect(pass.outcome?.unchanged == true)
        #expect(pass.outcome?.requests == 1)
        #expect(pass.batches.isEmpty)
        let stats = try JSONSerialization.jsonObject(with: server.control("/stats")) as? [String: Any]
        #expect((stats?["paths"] as? [String: Int])?["/etag"] == 1)
        // Last-Modified alone also works; a different URL never gets the validators.
        cursor.etag = nil
        cursor.lastModified = "Thu, 01 Jan 2026 00:00:00 GMT"
        #expect(try Self.sync(store, cursor: cursor.stored).outcome?.unchanged == true)
        cursor.firstURL = url + "?other"
        let changed = try Self.sync(store, cursor: cursor.stored)
        #expect(changed.outcome?.unchanged != true)
        #expect(changed.error?.kind == .malformedResponse)
    }

    @Test func fileChainAndBadPages() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-json-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data(#"{"rows":[{"id":"a","v":1},{"id":"b","v":2}],"next":"page2.json"}"#.utf8).write(to: directory.appendingPathComponent("page1.json"))
        try Data(#"{"rows":[{"id":"c","v":3},{"v":4},{"id":"d","v":5}],"next":null}"#.utf8).write(to: directory.appendingPathComponent("page2.json"))
        let store = try Self.store(directory.appendingPathComponent("page1.json").absoluteString,
                               ["records-path": "rows", "version-field": "v", "pagination": "next-url:next"])
        let pass = try Self.sync(store)
        #expect(pass.error == nil)
        #expect(pass.records.map(\.id) == ["a", "b", "c", "d"])
        #expect(pass.problems.count == 1 && pass.problems[0].position == 1)
        #expect(JSONCollectionCursor(stored: pass.finalCursor ?? "")?.highWater == "5")
        // A truncated page: a typed error naming the byte, nothing of the page handed over.
        try Data(#"{"rows":[{"id":"c","v":3},{"id":"#.utf8).write(to: directory.appendingPathComponent("page2.json"))
        let broken = try Self.sync(store)
        #expect(broken.batches.count == 1)
        #expect(broken.error?.kind == .malformedResponse)
        #expect(broken.error?.position == "byte 32") // the end of the truncated page
        #expect(broken.error?.url.hasSuffix("page2.json") == true)
    }

    /// Consecutive pages go out as one batch of about `batchTarget` records, cut at page
    /// boundaries; sorted pages still commit a cursor with every batch, naming its last record.
    @Test func pagesAreGatheredIntoBatches() throws {
        let server = try Self.startPages()
        let sorted = try Self.store(server.baseURL + "/nexturl", ["records-path": "items", "pagination": "next-url:next",
                                                            "page-size-param": "per_page", "updated-param": "since"])
        let pass = try Self.sync(sorted, batchTarget: 100)
        #expect(pass.error == nil)
        #expect(pass.batches.map(\.changes.count) == [120, 120, 10])
        #expect(pass.records.map(\.id) == (1...250).map(String.init))
        for batch in pass.batches {
            let cursor = try #require(batch.cursor.flatMap(JSONCollectionCursor.init(stored:)))
            #expect(cursor.highWater == batch.changes.last.map { String(format: "2024-01-01T00:00:00.%06d", Int($0.id)!) })
        }
        // Unsorted: only the last batch commits; the default target takes the whole collection.
        let unsorted = try Self.store(server.baseURL + "/link", ["pagination": "link", "page-size-param": "per_page"])
        let whole = try Self.sync(unsorted, reconcile: true, batchTarget: 10_000)
        #expect(whole.batches.count == 1)
        #expect(whole.batches.first?.cursor != nil)
        #expect(whole.listed.count == 250 && whole.records.count == 250)
        #expect(whole.outcome?.listingComplete == true && whole.outcome?.requests == 7)
    }

    /// While the sink merges, the producer fetches at most one batch of records ahead.
    @Test func producerWaitsForASlowMerge() throws {
        let server = try Self.startPages()
        let store = try Self.store(server.baseURL + "/link", ["pagination": "link", "page-size-param": "per_page"])
        let requestsDuringMerge = RequestCount()
        let pass = try Self.sync(store, batchTarget: 40) { sink, _ in
            sink.afterBatch = { number in
                guard number == 1 else { return }
                // Give the producer time to run ahead if it would.
                Thread.sleep(forTimeInterval: 0.5)
                requestsDuringMerge.value = (try? JSONSerialization.jsonObject(with: server.control("/stats")) as? [String: Any])?["requests"] as? Int
            }
        }
        #expect(pass.error == nil)
        #expect(pass.records.count == 250)
        // Page 1 was taken; page 2 (40 unconsumed records = the bound) was fetched; page 3 waits.
        let during = try #require(requestsDuringMerge.value)
        #expect(during <= 2, "the producer requested \(during) pages while the first batch merged")
    }

    /// A cancel between batches ends the pass: no sink call after it, the producer stops.
    @Test func cancelBetweenBatches() throws {
        let server = try Self.startPages()
        let store = try Self.store(server.baseURL + "/link", ["pagination": "link", "page-size-param": "per_page"])
        let pass = try Self.sync(store, batchTarget: 40) { sink, source in
            sink.afterBatch = { [weak sink, weak source] number in
                guard number == 2 else { return }
                source?.cancel()
                sink?.markEnded()
            }
        }
        #expect(pass.batches.count == 2)
        #expect(pass.callsAfterEnd == 0 && pass.offLoopCalls == 0)
        #expect(pass.outcome == nil && pass.error == nil)
    }

    /// A failing page: the complete pages held for a batch are handed over first.
    @Test func heldPagesGoOutBeforeAFailure() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-json-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data(#"{"rows":[{"id":"a","v":1}],"next":"page2.json"}"#.utf8).write(to: directory.appendingPathComponent("page1.json"))
        try Data(#"{"rows":[{"id":"b","v":2}],"next":"page3.json"}"#.utf8).write(to: directory.appendingPathComponent("page2.json"))
        try Data(#"{"rows":[{"id":"c","v":3}"#.utf8).write(to: directory.appendingPathComponent("page3.json"))
        let store = try Self.store(directory.appendingPathComponent("page1.json").absoluteString,
                               ["records-path": "rows", "version-field": "v", "pagination": "next-url:next"])
        let pass = try Self.sync(store, batchTarget: 10_000)
        #expect(pass.batches.count == 1)
        #expect(pass.records.map(\.id) == ["a", "b"])
        #expect(pass.finalCursor == nil, "an unsorted collection commits its cursor only after the last page")
        #expect(pass.error?.kind == .malformedResponse)
        #expect(pass.error?.url.hasSuffix("page3.json") == true)
    }

    /// An empty id (flagged by the scanner) is a problem at its page position, and its page goes out alone.
    @Test func emptyIDIsAPageProblem() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-json-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data(#"{"rows":[{"id":"a","v":1}],"next":"page2.json"}"#.utf8).write(to: directory.appendingPathComponent("page1.json"))
        try Data(#"{"rows":[{"id":"b","v":2},{"id":"","v":3}],"next":null}"#.utf8).write(to: directory.appendingPathComponent("page2.json"))
        let store = try Self.store(directory.appendingPathComponent("page1.json").absoluteString,
                               ["records-path": "rows", "version-field": "v", "pagination": "next-url:next"])
        let pass = try Self.sync(store, batchTarget: 10_000)
        #expect(pass.error == nil)
        #expect(pass.records.map(\.id) == ["a", "b"])
        #expect(pass.problems.map(\.position) == [1])
        #expect(pass.problems.first?.reason.contains("empty") == true)
        // The page with the problem went out alone, its origin naming it.
        #expect(pass.batches.map(\.changes.count) == [1, 1])
        #expect(pass.batches.last?.origin.hasSuffix("page2.json") == true)
    }
}

/// A value the sink's callback (on the pass's loop) hands to the test thread after the pass.
private final class RequestCount: @unchecked Sendable {
    var value: Int?
}
