import FerryKit
import Foundation

/// Records and pages shaped like a typical REST API's, for benchmarks and tests: one
/// generator, so every benchmark measures the same kind of data.
public enum SampleRecords {
    /// One ~350-byte JSON record with a random 16-hex `objectId`, the given `updatedAt`, and
    /// fields of the usual types (strings, numbers, a boolean, an array).
    public static func record(_ generator: inout SeededGenerator, version: String) -> RemoteRecord {
        let id = String(generator.next(), radix: 16)
        let paddedID = String(repeating: "0", count: max(0, 16 - id.count)) + id
        let n = generator.next()
        let body = #"{"objectId":"\#(paddedID)","updatedAt":"\#(version)","createdAt":"2023-03-04T05:06:07.000Z","name":"Person \#(n % 100_000)","email":"user\#(n % 1_000_000)@example.org","phone":"+47 \#(n % 90_000_000 + 10_000_000)","city":"Oslo","score":\#(n % 1000),"active":true,"tags":["alpha","beta","gamma"],"notes":"Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor."}"#
        return RemoteRecord(id: paddedID, version: version, body: Data(body.utf8))
    }

    /// An ISO-8601 timestamp that grows with `index` (one second apart), as an API sorted by
    /// its updated field gives. Months count 28 days, so the arithmetic stays trivial; the
    /// text still sorts in record order.
    public static func version(of index: Int) -> String {
        let days = index / 86_400, seconds = index % 86_400
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.000Z", 2024 + days / 336, 1 + (days / 28) % 12, 1 + days % 28,
                      seconds / 3600, seconds / 60 % 60, seconds % 60)
    }

    /// A page `{"count":TOTAL,"next":NEXT,"results":[...]}` of `count` records starting at
    /// record `index`; each record gets `extra` appended inside its object (padding it to a
    /// benchmark's record size).
    public static func page(_ generator: inout SeededGenerator, index: Int, count: Int, total: Int, next: String?,
                            extra: String = "") -> Data {
        var page = Data()
        page.reserveCapacity(count * 400 + 128)
        let nextJSON = next.map { "\"\($0)\"" } ?? "null"
        page.append(contentsOf: Array("{\"count\":\(total),\"next\":\(nextJSON),\"results\":[".utf8))
        let padding = Array(extra.utf8)
        for offset in 0..<count {
            if offset > 0 { page.append(UInt8(ascii: ",")) }
            let body = record(&generator, version: version(of: index + offset)).body
            if padding.isEmpty {
                page.append(body)
            } else {
                page.append(body.dropLast())
                page.append(contentsOf: padding)
                page.append(UInt8(ascii: "}"))
            }
        }
        page.append(contentsOf: Array("]}".utf8))
        return page
    }
}
