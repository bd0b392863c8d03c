import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// RFC 8259 conformance of the scanner's validator, in the style of JSONTestSuite's y_/n_ cases.
@Suite struct JSONRecordScannerConformanceTests {
    static let valid: [String] = [
        "[]", "{}", " [ ] ", "\t\n\r[1]\n", "0", "-0", "1", "-1", "0.5", "-0.0e+1", "1E10", "1e-7", "123456789012345678901234567890",
        "true", "false", "null", "\"\"", "\"a\"", "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", "\"\\u0000\"", "\"\\u00e9\"", "\"\\uD834\\uDD1E\"",
        "\"é\"", "\"𝄞\"", "\"日本\"", "\"\u{7F}\"", "[1,2,3]", "[[[]]]", "{\"a\":{\"b\":[null,true,false]}}", "{\"a\":1,\"a\":2}",
        "[\"\\u0061\"]", "{\"\":0}", "[-1.5e3,0E0,0e-0]", "[\"abcdefghijklmnopqrstuvwxyz0123456789\"]",
        String(repeating: "[", count: 512) + String(repeating: "]", count: 512),
    ]

    static let invalid: [String] = [
        "", " ", "[", "]", "[1,]", "[,1]", "[1 2]", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "{a:1}", "{'a':1}", "['a']", "[01]", "[1.]",
        "[.5]", "[1e]", "[1e+]", "[-]", "[+1]", "[0x10]", "[NaN]", "[Infinity]", "[-Infinity]", "[tru]", "[True]", "[nul]",
        "\"abc", "\"\\x\"", "\"\\u12\"", "\"\\u12G4\"", "\"\\uD800\"", "\"\\uDC00\"", "\"\\uD800\\u0041\"", "\"\t\"",
        "\"\n\"", "[1]x", "[1] [2]", "{}{}", "[\"a\"\"b\"]", "{\"a\" 1}", "[1,,2]", "/* c */ []", "[1] // c", "\u{FEFF}[]",
        String(repeating: "[", count: 513) + String(repeating: "]", count: 513), "[\"\\", "[-01]", "[1.0e]", "{\"a\":1 \"b\":2}",
    ]

    @Test func acceptsValidDocuments() {
        for text in Self.valid {
            #expect(throws: Never.self, "\(text.debugDescription)") { try JSONRecordScanner.validate(Data(text.utf8)) }
        }
    }

    @Test func rejectsInvalidDocuments() {
        for text in Self.invalid {
            #expect(throws: JSONScanError.self, "\(text.debugDescription)") { try JSONRecordScanner.validate(Data(text.utf8)) }
        }
    }

    @Test func rejectsInvalidUTF8() {
        let cases: [[UInt8]] = [
            [0x22, 0xFF, 0x22], [0x22, 0xC0, 0xAF, 0x22], [0x22, 0xE0, 0x80, 0xAF, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22],
            [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], [0x22, 0xC3, 0x22], [0x22, 0x80, 0x22], [0x22, 0xF0, 0x9F, 0x98, 0x22],
        ]
        for bytes in cases {
            #expect(throws: JSONScanError.self, "\(bytes)") { try JSONRecordScanner.validate(Data(bytes)) }
        }
        #expect(throws: Never.self) { try JSONRecordScanner.validate(Data([0x22, 0xF0, 0x9F, 0x98, 0x80, 0x22])) }
    }

    @Test func errorsNameTheByteOffset() throws {
        let error = try #require(throws: JSONScanError.self) {
            try JSONRecordScanner.validate(Data("[1, 2, x]".utf8))
        }
        #expect(error.kind == .syntax)
        #expect(error.offset == 7)
        let truncated = try #require(throws: JSONScanError.self) {
            try JSONRecordScanner.validate(Data("{\"results\":[{\"id\":\"a\"".utf8))
        }
        #expect(truncated.offset == 21) // the end of the input
    }

    @Test func extractsIdsVersionsAndFields() throws {
        let page = #"{"count": 3, "next": "http://x/?p=2", "meta": {"cursor": "c\u00e9", "n": null}, "results": ["#
            + #"{"id": "a\"1", "meta": {"updated": "2024-01-01T00:00:00.000Z"}, "x": [1, {"id": 9}]},"#
            + #"{"id": 42, "meta": {"updated": 7}},"#
            + #"{"meta": {"updated": "v"}}, 5, {"id": "b", "meta": {}}, {"id": true, "meta": {"updated": "v"}}]}"#
        let scanner = JSONRecordScanner(layout: .init(recordsPath: "results", idPath: "id", versionPath: "meta.updated",
                                                      fieldPaths: ["count", "next", "meta.cursor", "meta.n", "missing"]))
        let data = Data(page.utf8)
        let result = try scanner.scan(data)
        #expect(result.fields["count"] == .number("3"))
        #expect(result.fields["next"] == .string("http://x/?p=2"))
        #expect(result.fields["meta.cursor"] == .string("cé"))
        #expect(result.fields["meta.n"] == .null)
        #expect(result.fields["missing"] == nil)
        #expect(result.records.count == 6)
        let first = result.records[0]
        #expect(first.id == "a\"1")
        #expect(first.version == "2024-01-01T00:00:00.000Z")
        #expect(first.problem == nil)
        let slice = String(decoding: data[first.range], as: UTF8.self)
        #expect(slice.hasPrefix("{\"id\": \"a\\\"1\""))
        #expect(slice.hasSuffix("}]}"))
        #expect(result.records[1].problem?.reason == "id is not a string")
        #expect(result.records[2].problem?.reason.hasPrefix("record has no id") == true)
        #expect(result.records[3].problem?.reason == "record is not an object")
        #expect(result.records[4].problem?.reason.hasPrefix("record has no version") == true)
        #expect(result.records[4].problem?.id == "b")
        #expect(result.records[5].problem?.reason == "id is not a string")
        #expect(result.records[5].problem?.position == 5)

        let integers = JSONRecordScanner(layout: .init(recordsPath: "results", idPath: "id", versionPath: "meta.updated",
                                                       allowsIntegerIDs: true))
        let withIntegers = try integers.scan(data)
        #expect(withIntegers.records[1].id == "42")
        #expect(withIntegers.records[1].version == "7")
        #expect(withIntegers.records[1].problem == nil)
    }

    @Test func topLevelArrayAndShapeErrors() throws {
        let scanner = JSONRecordScanner(layout: .init(recordsPath: "", idPath: "id"))
        let page = try scanner.scan(Data(#" [ {"id":"x"} , {"id" : "y"} ] "#.utf8))
        #expect(page.records.map(\.id) == ["x", "y"])
        let notArray = try #require(throws: JSONScanError.self) { try scanner.scan(Data(#"{"id":"x"}"#.utf8)) }
        #expect(notArray.kind == .shape)
        let nested = JSONRecordScanner(layout: .init(recordsPath: "data.rows", idPath: "id"))
        #expect(try nested.scan(Data(#"{"data":{"rows":[{"id":"q"}]}}"#.utf8)).records.map(\.id) == ["q"])
        let missing = try #require(throws: JSONScanError.self) { try nested.scan(Data(#"{"data":{}}"#.utf8)) }
        #expect(missing.kind == .shape)
        // Invalid JSON after a shape problem is still a syntax error.
        let broken = try #require(throws: JSONScanError.self) { try nested.scan(Data(#"{"data":5,"#.utf8)) }
        #expect(broken.kind == .syntax)
        let escapedKey = JSONRecordScanner(layout: .init(recordsPath: "rows", idPath: "id"))
        #expect(try escapedKey.scan(Data(#"{"r\u006fws":[{"\u0069d":"k"}]}"#.utf8)).records.map(\.id) == ["k"])
    }
}
