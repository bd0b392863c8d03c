import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// The scanner against Foundation's JSONSerialization: generated pages must agree record by
/// record, and seeded random mutations of valid pages must never crash the scanner and must get
/// the same valid/invalid verdict.
///
/// `FERRY_FUZZ_ITERATIONS=200000 swift test --filter JSONRecordScannerFuzzTests` runs a longer
/// fuzz; `FERRY_FUZZ_SEED` picks the seed (printed on failure).
@Suite struct JSONRecordScannerFuzzTests {
    static let layout = JSONRecordScanner.Layout(recordsPath: "results", idPath: "id", versionPath: "updated_at", fieldPaths: ["count", "next"])

    @Test func generatedPagesMatchJSONSerialization() throws {
        var rng = SeededGenerator(seed: 42)
        let scanner = JSONRecordScanner(layout: Self.layout)
        for _ in 0..<200 {
            let (text, ids) = JSONDocumentGenerator.page(&rng, records: Int.random(in: 0...20, using: &rng))
            let data = Data(text.utf8)
            let page = try scanner.scan(data)
            #expect(page.records.map(\.id) == ids)
            let reference = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            let records = try #require(reference["results"] as? [Any])
            #expect(records.count == page.records.count)
            #expect(page.fields["count"] == .number(String(ids.count)))
            #expect(page.fields["next"] == JSONScalar.null)
            for (scanned, expected) in zip(page.records, records) {
                let slice = data[scanned.range]
                let reparsed = try JSONSerialization.jsonObject(with: Data(slice))
                // Same object: equal canonical (sorted-key) serializations.
                let canonical = try JSONSerialization.data(withJSONObject: reparsed, options: [.sortedKeys])
                let expectedCanonical = try JSONSerialization.data(withJSONObject: expected, options: [.sortedKeys])
                #expect(canonical == expectedCanonical, "\(String(decoding: slice, as: UTF8.self))")
                let dictionary = try #require(expected as? [String: Any])
                #expect(scanned.version == dictionary["updated_at"] as? String)
            }
        }
    }

    @Test func unescapedIdsMatchJSONSerialization() throws {
        var rng = SeededGenerator(seed: 7)
        let scanner = JSONRecordScanner(layout: .init(recordsPath: "", idPath: "k"))
        for _ in 0..<500 {
            let key = JSONDocumentGenerator.string(&rng, maxLength: 10)
            let data = Data("[{\"k\":\(key)}]".utf8)
            let page = try scanner.scan(data)
            let reference = try #require(try JSONSerialization.jsonObject(with: data) as? [[String: String]])
            let expected = reference[0]["k"]!
            if expected.isEmpty {
                #expect(page.records[0].problem?.reason == "id is empty")
            } else {
                #expect(page.records[0].id == expected)
            }
        }
    }

    @Test func mutatedPagesNeverCrashAndAgreeOnValidity() throws {
        let environment = ProcessInfo.processInfo.environment
        let iterations = environment["FERRY_FUZZ_ITERATIONS"].flatMap(Int.init) ?? 3000
        let seed = environment["FERRY_FUZZ_SEED"].flatMap(UInt64.init) ?? 20_261_123
        var rng = SeededGenerator(seed: seed)
        let scanner = JSONRecordScanner(layout: Self.layout)
        var disagreements: [String] = []
        var invalidSeen = 0
        for iteration in 0..<iterations {
            let (text, _) = JSONDocumentGenerator.page(&rng, records: Int.random(in: 1...6, using: &rng))
            var bytes = Array(text.utf8)
            for _ in 0..<Int.random(in: 1...3, using: &rng) {
                mutate(&bytes, &rng)
            }
            let data = Data(bytes)
            var scannerValid = true
            var errorOffset = -1
            do {
                _ = try scanner.scan(data)
            } catch {
                if error.kind == .syntax {
                    scannerValid = false
                    errorOffset = error.offset
                }
                // The reported offset is always inside the page (or its end).
                #expect(error.offset >= 0 && error.offset <= bytes.count)
            }
            if !scannerValid { invalidSeen += 1 }
            guard let referenceValid = Self.foundationVerdict(bytes) else { continue }
            // Foundation accepts a trailing comma before } or ]; RFC 8259 (and the scanner) do not.
            if !scannerValid, referenceValid, Self.isTrailingComma(bytes, at: errorOffset) { continue }
            if scannerValid != referenceValid, disagreements.count < 5 {
                disagreements.append("seed \(seed) iteration \(iteration): scanner \(scannerValid) foundation \(referenceValid): \(String(decoding: bytes, as: UTF8.self).debugDescription)")
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.joined(separator: "\n"))")
        #expect(invalidSeen > iterations / 4, "mutations should break most pages")
    }

    /// Foundation's verdict, or nil where Foundation is deliberately more lenient than RFC 8259
    /// (it sniffs UTF-16/32 from NUL bytes and accepts a BOM) and the comparison means nothing.
    static func foundationVerdict(_ bytes: [UInt8]) -> Bool? {
        if bytes.prefix(4).contains(0) || bytes.starts(with: [0xEF, 0xBB, 0xBF]) { return nil }
        return (try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])) != nil
    }

    static func isTrailingComma(_ bytes: [UInt8], at offset: Int) -> Bool {
        guard offset >= 0, offset < bytes.count, bytes[offset] == UInt8(ascii: "}") || bytes[offset] == UInt8(ascii: "]") else { return false }
        var index = offset - 1
        while index >= 0, [0x20, 0x0A, 0x0D, 0x09].contains(bytes[index]) { index -= 1 }
        return index >= 0 && bytes[index] == UInt8(ascii: ",")
    }

    private func mutate(_ bytes: inout [UInt8], _ rng: inout SeededGenerator) {
        guard !bytes.isEmpty else {
            bytes.append(UInt8.random(in: 0...255, using: &rng))
            return
        }
        let position = Int.random(in: 0..<bytes.count, using: &rng)
        let interesting: [UInt8] = Array("{}[]\",:\\ 0-.eE+tfnu".utf8) + [0x00, 0x1F, 0x7F, 0x80, 0xC3, 0xE2, 0xED, 0xF0, 0xFF]
        switch Int.random(in: 0..<5, using: &rng) {
        case 0: bytes.removeSubrange(position...)
        case 1: bytes[position] ^= UInt8(1) << UInt8.random(in: 0...7, using: &rng)
        case 2: bytes.insert(interesting.randomElement(using: &rng)!, at: position)
        case 3: bytes[position] = interesting.randomElement(using: &rng)!
        default: bytes.remove(at: position)
        }
    }
}
