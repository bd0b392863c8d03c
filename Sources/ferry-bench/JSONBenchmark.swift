import ArgumentParser
import Foundation
import FerryKit

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

        let scanner = JSONRecordScanner(layout: .init(recordsPath: "results", idPath: "id", versionPath: "updated_at",
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

    /// Pages like a paginated API's: `{"count":N,"next":URL,"results":[...]}` with records of
    /// a 16-hex id, an ISO timestamp, and text fields padded to the record size.
    static func makePages(records: Int, pageSize: Int, recordBytes: Int) -> [Data] {
        var pages: [Data] = []
        var generator = SystemRandomNumberGenerator()
        let words = ["lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit", "sed", "do", "café", "naïve"]
        var index = 0
        while index < records {
            let count = min(pageSize, records - index)
            var text = "{\"count\":\(records),\"next\":\"http://127.0.0.1/items?page=\(pages.count + 2)\",\"results\":["
            for offset in 0..<count {
                if offset > 0 { text += "," }
                let id = String(UInt64.random(in: 0...UInt64.max, using: &generator), radix: 16)
                var record = "{\"id\":\"\(id)\",\"updated_at\":\"2024-03-\(10 + offset % 18)T12:00:\(10 + offset % 50).000Z\","
                    + "\"n\":\(index + offset),\"active\":true,\"score\":\(Double(offset) / 7),\"tags\":[\"a\",\"b\"],\"text\":\""
                while record.utf8.count < recordBytes - 2 {
                    record += words.randomElement(using: &generator)! + " "
                }
                record += "\"}"
                text += record
            }
            text += "]}"
            pages.append(Data(text.utf8))
            index += count
        }
        return pages
    }
}
