import Foundation
import Testing
@testable import FerryKit

/// A page whose records were merged before is scanned for less: its ids for a sweep, only its
/// count between sweeps. Either way the whole page is still validated and its fields read.
@Suite struct JSONRecordScannerDetailTests {
    static let scanner = JSONRecordScanner(layout: .init(recordsPath: "results", idPath: "objectId", versionPath: "updatedAt",
                                                         fieldPaths: ["next", "count"]))
    static let page = Data("""
        {"count": 3, "results": [
          {"objectId": "a", "updatedAt": "2024-01-01", "n": {"deep": [1, 2, {"x": "y"}]}},
          {"objectId": "b\\u00e9", "updatedAt": 7},
          {"updatedAt": "2024-01-02", "objectId": "c"}
        ], "next": "/pages/2.json"}
        """.utf8)

    @Test func everyDetailFindsTheSameRecordsAndFields() throws {
        let full = try Self.scanner.scan(Self.page)
        let ids = try Self.scanner.scan(Self.page, detail: .ids)
        let count = try Self.scanner.scan(Self.page, detail: .count)

        #expect(full.recordCount == 3)
        #expect(full.records.map(\.version) == ["2024-01-01", "7", "2024-01-02"])
        #expect(ids.recordCount == 3)
        #expect(ids.records.map(\.id) == full.records.map(\.id))
        #expect(ids.records.map(\.range) == full.records.map(\.range))
        #expect(ids.records.allSatisfy { $0.version == nil && $0.problem == nil })
        #expect(count.recordCount == 3)
        #expect(count.records.isEmpty)
        for scanned in [ids, count] {
            #expect(scanned.fields == full.fields)
        }
        #expect(full.fields["next"]?.text == "/pages/2.json")
    }

    /// HubSpot's `paging.next.after` beside the common `paging.next` that pages are searched
    /// for: the longer path is found through the object the shorter one ends at (it was lost,
    /// and the listing ended after its first page).
    @Test func aNestedFieldIsFoundBesideAShorterPathEndingAtItsObject() throws {
        let scanner = JSONRecordScanner(layout: .init(recordsPath: "results", idPath: "id", versionPath: "v",
                                                     fieldPaths: ["paging.next.after", "paging.next", "paging.total"]))
        let page = try scanner.scan(Data(#"{"results":[{"id":"1","v":"a"}],"paging":{"next":{"after":"100","link":"x"},"total":7}}"#.utf8))
        #expect(page.fields["paging.next.after"]?.text == "100")
        #expect(page.fields["paging.total"]?.text == "7")
        #expect(page.records.count == 1)
        let flat = try scanner.scan(Data(#"{"results":[],"paging":{"next":"https://api.example.com/p2"}}"#.utf8))
        #expect(flat.fields["paging.next"]?.text == "https://api.example.com/p2", "a scalar at the shorter path is still read")
    }

    @Test func aRecordWithoutAVersionIsAProblemOnlyWhereVersionsAreRead() throws {
        let page = Data(#"{"results": [{"objectId": "a"}]}"#.utf8)
        #expect(try Self.scanner.scan(page).records.first?.problem != nil)
        #expect(try Self.scanner.scan(page, detail: .ids).records.first?.problem == nil)
    }

    @Test(arguments: [JSONRecordScanner.Detail.records, .ids, .count])
    func invalidJSONFailsWhateverTheDetail(_ detail: JSONRecordScanner.Detail) {
        let broken = Data(#"{"results": [{"objectId": "a", "updatedAt": "1"}, {"objectId": tru}]}"#.utf8)
        #expect(throws: JSONScanError.self) { try Self.scanner.scan(broken, detail: detail) }
    }
}
