import ArgumentParser
import Foundation
import FerryKit
import FerryTestSupport

/// `ferry-bench json-parse`: JSONRecordScanner throughput against Foundation's JSONSerialization
/// on the same generated pages, in the same run.
struct JSONBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "json-parse",
        abstract: "Scanner throughput (MB/s, records/s) vs JSONSerialization on the same pages."
    )

    @Option(help: "Records in all.") var records = 100_000
    @Option(help: "Records per page.") var pageSize = 1000
    @Option(help: "Approximate bytes per record.") var recordBytes = 370
    @Option(help: "Rounds of each parser (the best is reported).") var rounds = 3

    func run() throws {
        let pages = Self.makePages(records: records, pageSize: pageSize, recordBytes: recordBytes)
        let bytes = pages.reduce(0) { $0 + $1.count }
        print("pages: \(pages.count) × \(pageSize) records, \(bytes / 1_000_000) MB, \(bytes / max(records, 1)) bytes/record")

        let scanner = JSONRecordScanner(layout: .init(recordsPath: "results", idPath: "objectId", versionPath: "updatedAt",
                                                      fieldPaths: ["next", "count"]))
        var scanned = 0
        let scanSeconds = try Self.best(rounds) {
            scanned = 0
            for page in pages {
                scanned += try scanner.scan(page).records.count
            }
        }
        var materialized = 0
        let recordSeconds = try Self.best(rounds) {
            materialized = 0
            for page in pages {
                let result = try scanner.scan(page)
                var changes: [RecordChange] = []
                changes.reserveCapacity(result.records.count)
                for record in result.records {
                    guard let id = record.id, let version = record.version else { continue }
                    changes.append(.upsert(RemoteRecord(id: id, version: version, body: page.subdata(in: record.range))))
                }
                materialized += changes.count
            }
        }
        var foundationRecords = 0
        let foundationSeconds = try Self.best(rounds) {
            foundationRecords = 0
            for page in pages {
                let object = try JSONSerialization.jsonObject(with: page) as? [String: Any]
                foundationRecords += (object?["results"] as? [Any])?.count ?? 0
            }
        }
        precondition(scanned == records && materialized == records && foundationRecords == records, "record counts differ")

        func line(_ name: String, _ seconds: Double) -> String {
            let mbps = Double(bytes) / seconds / 1e6
            let rps = Double(records) / seconds
            return "\(name): \(String(format: "%.1f", mbps)) MB/s, \(String(format: "%.0f", rps)) records/s"
        }
        print(line("JSONRecordScanner (scan only)", scanSeconds))
        print(line("JSONRecordScanner (+ RemoteRecord bodies)", recordSeconds))
        print(line("JSONSerialization", foundationSeconds))
        print("ratio scanner/JSONSerialization: \(String(format: "%.1f", foundationSeconds / scanSeconds))× (scan only), "
              + "\(String(format: "%.1f", foundationSeconds / recordSeconds))× (with records)")
    }

    static func best(_ rounds: Int, _ body: () throws -> Void) throws -> Double {
        var best = Double.infinity
        for _ in 0..<max(rounds, 1) {
            let start = DispatchTime.now().uptimeNanoseconds
            try body()
            best = min(best, Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
        }
        return best
    }

    /// Pages like a paginated API's (``SampleRecords``), each record padded with text to
    /// about `recordBytes`.
    static func makePages(records: Int, pageSize: Int, recordBytes: Int) -> [Data] {
        var generator = SeededGenerator(seed: 11)
        let extra = #","text":""# + String(repeating: "lorem ipsum ", count: max(0, recordBytes - 360) / 12) + "\""
        return stride(from: 0, to: records, by: pageSize).map { index in
            SampleRecords.page(&generator, index: index, count: min(pageSize, records - index), total: records,
                               next: "http://127.0.0.1/items?page=\(index / pageSize + 2)", extra: extra)
        }
    }
}
