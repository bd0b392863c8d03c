import FerryKit
import FerryTestSupport
import Foundation

/// A paginated JSON collection pre-rendered as static files, for nginx to serve: page `n` is
/// `<root>/pages/<n>.json`, shaped like a typical REST listing,
/// `{"count":N,"next":"/pages/<n+1>.json","results":[...]}` (the last page has `"next":null`).
///
/// Records are ``SampleRecords/record(_:version:)``'s ~370-byte objects with random 16-hex
/// `objectId`s from a seeded generator and an `updatedAt` that grows with the position (the
/// order an API sorted by its updated field would give). Pages are written one at a time, so
/// generating a million records needs memory for one page only.
struct StaticPages {
    let root: URL
    let records: Int
    let pageSize: Int

    var pageCount: Int { (records + pageSize - 1) / pageSize }

    /// The URL path of page `number` (1-based).
    static func path(ofPage number: Int) -> String { "/pages/\(number).json" }

    /// Writes every page under `root`; returns the total bytes written.
    @discardableResult
    func render(seed: UInt64 = 7) throws -> Int64 {
        let directory = root.appendingPathComponent("pages")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o755])
        var generator = SeededGenerator(seed: seed)
        var total: Int64 = 0
        var index = 0
        for number in 1...max(pageCount, 1) {
            let count = min(pageSize, records - index)
            let next = number < pageCount ? Self.path(ofPage: number + 1) : nil
            // The store benchmark's ~350-byte record, padded to ~370 bytes.
            let page = SampleRecords.page(&generator, index: index, count: count, total: records, next: next, extra: Self.padding)
            let path = directory.appendingPathComponent("\(number).json").path
            guard FileManager.default.createFile(atPath: path, contents: page, attributes: [.posixPermissions: 0o644]) else {
                throw BenchError.serverDidNotStart("cannot write \(path)")
            }
            total += Int64(page.count)
            index += count
        }
        return total
    }

    private static let padding = #","source":"json-e2e-bench""#

    /// The scanner layout of these pages (the same options the JSON store is configured with).
    static let layout = JSONRecordScanner.Layout(recordsPath: "results", idPath: "objectId", versionPath: "updatedAt",
                                                 fieldPaths: ["next", "count"])

    /// Reads page `number` back and returns its records as the merge engine would get them.
    /// Used to feed the raw baseline exactly the rows Ferry fetches; not timed.
    func records(ofPage number: Int, scanner: JSONRecordScanner) throws -> [RemoteRecord] {
        let data = try Data(contentsOf: root.appendingPathComponent("pages/\(number).json"))
        let page = try scanner.scan(data)
        return page.records.map { record in
            RemoteRecord(id: record.id ?? "", version: record.version ?? "", body: data.subdata(in: record.range))
        }
    }
}
