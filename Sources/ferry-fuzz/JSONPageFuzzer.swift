import FerryKit
import Foundation

/// Fuzzes JSONRecordScanner, the JSON page parser behind the Parse and JSON-collection sources,
/// with each layout those sources build (and Datasette's `rows`).
///
/// Invariants, beyond "never traps":
/// - the scanner and ``JSONRecordScanner/validate(_:maxDepth:)`` agree on whether the bytes are
///   JSON: a `.syntax` error exactly when validation fails, a `.shape` error only for valid JSON;
/// - an error's offset lies within the page (0...count);
/// - a scanned page's record ranges lie inside the page, in order, without overlap, and each is
///   a valid JSON value on its own;
/// - a record without a problem is an object with a non-empty id (and a version when the layout
///   asks for one): what the store merges is never anonymous.
enum JSONPageFuzzer {
    static let scanners: [JSONRecordScanner] = [
        // ParseSource's change scanner.
        JSONRecordScanner(layout: .init(recordsPath: "results", idPath: "objectId", versionPath: "updatedAt",
                                        fieldPaths: ["count"])),
        // JSONCollectionSource with its defaults (a top-level array, integer ids allowed).
        JSONRecordScanner(layout: .init(recordsPath: "", idPath: "id", versionPath: "updated_at",
                                        fieldPaths: ["next"], allowsIntegerIDs: true)),
        // JSONCollectionSource configured for Datasette (`?_shape=objects`), a dotted id path.
        JSONRecordScanner(layout: .init(recordsPath: "rows", idPath: "meta.id", versionPath: nil,
                                        fieldPaths: ["next", "next_url", "filtered_table_rows_count"],
                                        allowsIntegerIDs: true)),
    ]

    static func run(_ data: Data) {
        let valid: Bool
        do {
            try JSONRecordScanner.validate(data)
            valid = true
        } catch {
            valid = false
            FuzzCheck.expect(error.kind == .syntax, "validate threw a .shape error: \(error)")
            FuzzCheck.expect((0...data.count).contains(error.offset), "validate offset \(error.offset) outside 0...\(data.count)")
        }
        for scanner in scanners {
            check(scanner, data, valid: valid)
        }
    }

    private static func check(_ scanner: JSONRecordScanner, _ data: Data, valid: Bool) {
        let layout = "layout records=\(scanner.layout.recordsPath.debugDescription)"
        let page: JSONPage
        do {
            page = try scanner.scan(data)
        } catch {
            FuzzCheck.expect((0...data.count).contains(error.offset), "\(layout): offset \(error.offset) outside 0...\(data.count)")
            switch error.kind {
            case .syntax: FuzzCheck.expect(!valid, "\(layout): syntax error on JSON that validates: \(error)")
            case .shape: FuzzCheck.expect(valid, "\(layout): shape error on invalid JSON: \(error)")
            }
            return
        }
        FuzzCheck.expect(valid, "\(layout): scanned a page that does not validate")
        var previousEnd = 0
        for (index, record) in page.records.enumerated() {
            let range = record.range
            FuzzCheck.expect(range.lowerBound >= previousEnd && range.upperBound <= data.count && !range.isEmpty,
                             "\(layout): record \(index) range \(range) out of order or outside 0..<\(data.count)")
            previousEnd = range.upperBound
            let body = data[data.startIndex + range.lowerBound..<data.startIndex + range.upperBound]
            do {
                try JSONRecordScanner.validate(Data(body))
            } catch {
                FuzzCheck.fail("\(layout): record \(index) bytes are not one JSON value: \(error)")
            }
            guard record.problem == nil else { continue }
            FuzzCheck.expect(body.first == UInt8(ascii: "{"), "\(layout): record \(index) without a problem is not an object")
            FuzzCheck.expect(!(record.id ?? "").isEmpty, "\(layout): record \(index) without a problem has no id")
            if scanner.layout.versionPath != nil {
                FuzzCheck.expect(record.version != nil, "\(layout): record \(index) without a problem has no version")
            }
        }
    }
}
