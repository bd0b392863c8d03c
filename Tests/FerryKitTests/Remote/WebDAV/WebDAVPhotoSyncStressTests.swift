import Foundation
import Synchronization
import Testing
@testable import FerryKit
import FerryTestSupport

/// A sink that takes its time with each batch, as a merge into SQLite does, before handing it
/// to the sink the pass reports to.
final class SlowSink: RemoteSourceSink {
    private let base: any RemoteSourceSink
    private let delays: [TimeInterval]
    private var batches = 0

    /// Batch n costs `delays[n % delays.count]`.
    init(_ base: any RemoteSourceSink, delays: [TimeInterval]) {
        self.base = base
        self.delays = delays
    }

    func source(_ source: any RemoteSource, didProduce batch: ChangeBatch) throws {
        Thread.sleep(forTimeInterval: delays[batches % delays.count])
        batches += 1
        try base.source(source, didProduce: batch)
    }

    func source(_ source: any RemoteSource, didList ids: [String]) throws {
        try base.source(source, didList: ids)
    }

    func source(_ source: any RemoteSource, didFinishWith outcome: SourceOutcome) {
        base.source(source, didFinishWith: outcome)
    }

    func source(_ source: any RemoteSource, didFailWith error: SyncError) {
        base.source(source, didFailWith: error)
    }
}

/// A source whose sink is slow: wraps the sink a ``SourceRun`` gives it in a ``SlowSink``.
final class SlowSinkSource: RemoteSource {
    private let base: any RemoteSource
    private let delays: [TimeInterval]

    init(_ base: any RemoteSource, delays: [TimeInterval]) {
        self.base = base
        self.delays = delays
    }

    func start(_ plan: PassPlan, sink: any RemoteSourceSink) {
        base.start(plan, sink: SlowSink(sink, delays: delays))
    }

    func cancel() {
        base.cancel()
    }
}

/// First syncs of an address book of contacts with photos from a real server, repeated: the
/// collection query's answer is several MB, parsed while it downloads, the transfer suspended
/// and resumed as the parser falls behind and catches up, with a merge that takes its time.
/// Every pass must end with every card, well within a bound far below the session's 300 s
/// timeout (a hang detector, not a timing assertion).
///
/// 6 passes in every `swift test`; `FERRY_STRESS_ROUNDS=N` runs N / 10.
@Suite("WebDAVSource first syncs of photo cards against Xandikos", .enabled(if: DAVServer.shouldRun, "radicale/xandikos not installed: pip install radicale xandikos into $FERRY_VENV (bash scripts/test.sh does)"))
struct WebDAVPhotoSyncStressTests {
    /// 5.3 MB of address data: a query answer larger than the session's buffer.
    static let photoCards = 20
    static let photoBytes = 192 << 10

    /// Card `i`: a vCard 3.0 with a JPEG-sized base64 PHOTO folded at 75 octets.
    static func photoCard(_ i: Int) -> String {
        var random = WebDAVFuzzTests.Generator(state: UInt64(i) &+ 0xF0_70)
        let words = (0..<photoBytes / 8).map { _ in random.next() }
        let picture = words.withUnsafeBytes { Data($0) }.base64EncodedString()
        let line = Array("PHOTO;ENCODING=b;TYPE=JPEG:".utf8) + Array(picture.utf8)
        var folded = [String(decoding: line[..<75], as: UTF8.self)]
        var start = 75
        while start < line.count {
            folded.append(" " + String(decoding: line[start..<min(line.count, start + 74)], as: UTF8.self))
            start += 74
        }
        let lines = ["BEGIN:VCARD", "VERSION:3.0", "UID:ferry-photo-\(i)", "FN:Photo Person \(i)", "N:\(i);Photo;;;",
                     "EMAIL;TYPE=work:photo-\(i)@example.com"] + folded + ["END:VCARD"]
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    @Test func repeatedFirstSyncsOfPhotoCardsEndWithEveryCard() throws {
        let server = try DAVServer(.xandikos, cards: 0, events: 0)
        defer { server.stop() }
        let cards = (0..<Self.photoCards).map(Self.photoCard)
        for (i, card) in cards.enumerated() {
            try server.put(server.addressBookPath + "photo-\(i).vcf", card)
        }
        // Compared without CRs: the XML parser turns the literal CRLFs of address-data into LF.
        let withoutCR = { (data: Data) in data.filter { $0 != 0x0D } }
        let expectedBodies = cards.map { withoutCR(Data($0.utf8)) }
        let expected = Set((0..<Self.photoCards).map { "photo-\($0).vcf" })
        let rounds = HangDetector.rounds(default: 60) / 10
        var hung: [String] = []
        var broken: [String] = []
        var random = WebDAVFuzzTests.Generator(state: 0xD1_5C)
        for round in 0..<rounds {
            // A query answer larger than the session's buffer keeps the transfer reading
            // while the stream suspends it; the merges take up to a quarter second a batch.
            var store = server.store(batch: 5)
            store.session.bufferLimit = [256 << 10, 1 << 20, 4 << 20][round % 3]
            let delays = (0..<4).map { _ in TimeInterval.random(in: 0...0.25, using: &random) }
            let run = SourceRun(store: store, plan: PassPlan(cursor: nil, reconcile: false), factory: { context throws(SyncError) in
                SlowSinkSource(try context.store.options.value.makeSource(context), delays: delays)
            })
            let conditions = "round \(round): buffer \(store.session.bufferLimit >> 10) KiB, merges \(delays.map { Int($0 * 1000) }) ms"
            switch HangDetector.run(run, bound: MultistatusStreamStressTests.bound) {
            case .hung(let seconds):
                hung.append("\(conditions): no end after \(Int(seconds)) s")
            case .finished(let result, _):
                let pass = try result.get()
                let records = pass.upserts
                var problems: [String] = []
                if let error = pass.error { problems.append("\(error)") }
                if Set(records.keys) != expected || pass.upsertCount != Self.photoCards { problems.append("\(pass.upsertCount) upserts of \(records.count) ids") }
                if pass.outcome?.requests != 3 { problems.append("\(String(describing: pass.outcome?.requests)) requests, not a resource-type check, a listing and one query") }
                for (id, record) in records {
                    let i = Int(id.dropFirst("photo-".count).dropLast(".vcf".count)) ?? 0
                    if withoutCR(record.body) != expectedBodies[i] { problems.append("\(id): body differs (\(record.body.count) bytes)") }
                }
                if !problems.isEmpty { broken.append("\(conditions): \(problems.prefix(3).joined(separator: "; "))") }
            }
        }
        #expect(hung.isEmpty, "\(hung.count) of \(rounds) first syncs hung:\n\(hung.joined(separator: "\n"))")
        #expect(broken.isEmpty, "\(broken.count) of \(rounds) first syncs incomplete:\n\(broken.joined(separator: "\n"))")
    }
}
