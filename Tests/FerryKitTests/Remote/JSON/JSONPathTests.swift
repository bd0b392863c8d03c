import Foundation
import Testing
@testable import FerryKit

/// Paths reach any member, dots in names included (Microsoft Graph's `@odata.nextLink`).
@Suite struct JSONPathTests {
    @Test func aBackslashKeepsADotInAName() {
        #expect(JSONPath.components("data.items") == ["data", "items"])
        #expect(JSONPath.components(#"@odata\.nextLink"#) == ["@odata.nextLink"])
        #expect(JSONPath.components(#"meta.@odata\.count"#) == ["meta", "@odata.count"])
        #expect(JSONPath.components(#"a\\b"#) == [#"a\b"#])
        #expect(JSONPath.components("") == [])
        #expect(!JSONPath.isValid("a..b") && !JSONPath.isValid("a.") && JSONPath.isValid(#"@odata\.deltaLink"#))
    }

    /// A Graph page: the records under `value`, the next page at `@odata.nextLink`.
    @Test func theScannerReadsAMemberWhoseNameHasADot() throws {
        let page = Data(#"{"@odata.context":"x","value":[{"id":"a","lastModifiedDateTime":"1"}],"@odata.nextLink":"https://graph.example.com/next?$skiptoken=2","odata":{"nextLink":"wrong"}}"#.utf8)
        let scanner = JSONRecordScanner(layout: .init(recordsPath: "value", idPath: "id", versionPath: "lastModifiedDateTime",
                                                      fieldPaths: [#"@odata\.nextLink"#]))
        let scanned = try scanner.scan(page)
        #expect(scanned.records.count == 1)
        #expect(scanned.fields[#"@odata\.nextLink"#]?.text == "https://graph.example.com/next?$skiptoken=2")
        // Configured with another field, page 1 says which one it has, in the form to write.
        var options = JSONCollectionOptions()
        options.recordsPath = "value"
        options.pagination = .nextURL(path: "next")
        let withCommon = JSONRecordScanner(layout: .init(recordsPath: "value", idPath: "id", versionPath: "lastModifiedDateTime",
                                                         fieldPaths: options.fieldPaths))
        let hint = JSONPageDiagnosis.misconfiguration(try withCommon.scan(page), options: options)
        #expect(hint == #"pagination names next, which page 1 does not have, but it has @odata\.nextLink: set pagination = next-url:@odata\.nextLink"#)
    }
}
