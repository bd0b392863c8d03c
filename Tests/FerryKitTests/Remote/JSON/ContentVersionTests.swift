import Foundation
import Logging
import Testing
@testable import FerryKit
import FerryTestSupport

/// `version-field = none`, for APIs whose records carry nothing that changes with each update
/// (Stripe's objects): a record's version is a digest of its JSON, told apart but not ordered.
@Suite("Records without a version field: a digest of their JSON", .serialized)
struct ContentVersionTests {
    static func digest(_ text: String) -> String { JSONContentDigest.of(Array(text.utf8)) }

    @Test func theDigestIgnoresWhitespaceBetweenTokens_butNotInsideStrings() {
        let compact = #"{"id":"cus_1","name":"A  B","tags":["x","y"],"n":1}"#
        let pretty = "{\n  \"id\": \"cus_1\",\n  \"name\": \"A  B\",\n  \"tags\": [ \"x\", \"y\" ],\n\t\"n\": 1\r\n}"
        #expect(Self.digest(compact) == Self.digest(pretty))
        #expect(Self.digest(compact) != Self.digest(#"{"id":"cus_1","name":"A B","tags":["x","y"],"n":1}"#))
        #expect(Self.digest(compact) != Self.digest(#"{"id":"cus_1","name":"A  B","tags":["x","y"],"n":2}"#))
        // An escaped quote does not end the string: the spaces after it are still inside it.
        #expect(Self.digest(#"{"a":"\"  b"}"#) != Self.digest(#"{"a":"\" b"}"#))
        #expect(Self.digest(compact).count == 16)
    }

    @Test func theScannerGivesEachRecordItsDigest_andOnlyWhenAskedForRecords() throws {
        let scanner = JSONRecordScanner(layout: .init(recordsPath: "data", idPath: "id", versionIsDigest: true, allowsIntegerIDs: true))
        let page = #"{"data": [ {"id": "a", "v": 1}, {"id": 2, "v": [1, 2]} ], "has_more": false}"#
        let scanned = try scanner.scan(Data(page.utf8))
        #expect(scanned.records.map(\.version) == [Self.digest(#"{"id":"a","v":1}"#), Self.digest(#"{"id":2,"v":[1,2]}"#)])
        #expect(scanned.records.allSatisfy { $0.problem == nil })
        #expect(try scanner.scan(Data(page.utf8), detail: .ids).records.allSatisfy { $0.version == nil })
    }

    @Test(arguments: [
        (["updated-param": "since"], "updated-param", "every pass lists everything"),
        (["since-param": "q=after {since}"], "since-param", "every pass lists everything"),
        (["push": "yes", "push-update": "PATCH {url}/{id}", "push-if-match": "yes"], "push-if-match", "not the API's ETag"),
        (["pagination": "after:starting_after=updated_at"], "pagination", "id-field (id)"),
    ])
    func whatNeedsAnOrderedVersionIsRefusedAtLoad(_ keys: [String: String], _ key: String, _ words: String) {
        RequestBodyPaginationTests.expectRefusedAtLoad(keys, key, words, with: ["version-field = none"])
    }

    /// Stripe's customers as the panel's server lists them (newest first, starting_after): the
    /// stored version is the digest of the customer as served, a pass over changed pages writes
    /// only the customers whose JSON changed, and the cursor keeps no high-water mark.
    @Test func onlyRecordsWhoseJSONChangedAreWritten() throws {
        let server = try TestServer.python("json_pages_server.py", arguments: ["--count", "250"])
        defer { server.stop() }
        let replica = try PaginationStyleTests.Replica(url: server.baseURL + "/v1/customers", keys: [
            "pagination": "after:starting_after=id", "page-size-param": "limit", "page-size": "100",
            "records-path": "data", "has-more-path": "has_more", "version-field": "none",
        ])
        let database = replica.directory.path("replica.db")
        func stored() throws -> Set<String> { Set(try Shell.sqlite(database, "SELECT id || '|' || version FROM items WHERE deleted = 0")) }
        func expected() throws -> Set<String> {
            let rows = try JSONSerialization.jsonObject(with: server.control("/admin/expected?shape=stripe")) as? [[String]] ?? []
            return Set(rows.map { $0.joined(separator: "|") })
        }

        let first = try replica.sync()
        #expect(first.isComplete && first.counts.inserted == 250, "\(first.summary)")
        #expect(try stored() == expected(), "each version is the digest of the customer as served")

        // Every page changes (a customer on each is edited), so every page is read and merged:
        // the unchanged customers on them keep their digests and are not written.
        _ = try server.control("/admin/update", method: "POST", body: #"{"ids":[5, 120, 240]}"#)
        let second = try replica.sync()
        #expect(second.isComplete)
        #expect(second.counts.updated == 3 && second.counts.inserted == 0, "\(second.summary)")
        #expect(try stored() == expected())
        let cursor = try Shell.sqlite(database, "SELECT cursor FROM ferry_sync_state WHERE store = 'items'").first ?? ""
        #expect(!cursor.contains("highWater"), "a digest is no mark: \(cursor)")
    }
}
