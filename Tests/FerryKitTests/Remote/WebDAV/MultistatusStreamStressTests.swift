import Foundation
import Synchronization
import Testing
@testable import FerryKit
import FerryTestSupport

/// Multistatus bodies of up to several MB (vCards with big base64 photos) parsed while they
/// download through a real ``RemoteSession``, with random chunk sizes and pacing from the
/// server, random session buffers and a randomly slow owner: the stream suspends the transfer
/// from the owner's thread when the parser falls behind and resumes it from the parser's.
/// Every pass must end with all its responses, well within a bound far below the session's
/// timeout: a hang detector, not a timing assertion.
///
/// 100 passes in every `swift test`; a longer run with `FERRY_STRESS_ROUNDS=1000 swift test
/// --filter MultistatusStreamStress` (add `FERRY_STRESS_SEED=n` to draw other passes).
@Suite("MultistatusStream stress over loopback")
final class MultistatusStreamStressTests {
    /// No pass may take longer (the session's total timeout is 300 s in production).
    static let bound: TimeInterval = 30

    static var seed: UInt64 {
        ProcessInfo.processInfo.environment["FERRY_STRESS_SEED"].flatMap(UInt64.init) ?? 0x57_2E55
    }

    let server: TestServer

    init() throws {
        server = try TestServer.fault()
    }

    deinit {
        server.stop()
    }

    /// One pass's body and conditions, drawn from the pass's seed.
    struct Pass: CustomStringConvertible {
        var cards: Int
        var photoBytes: Int
        var photoEvery: Int
        var chunkMin: Int
        var chunkMax: Int
        var delayMs: Double
        var conditions: StreamedPassConditions

        init(seed: UInt64) {
            var random = WebDAVFuzzTests.Generator(state: seed)
            // 0.4 to 7 MB: 6 to 24 cards with photos of 48 to 160 KiB (65 to 220 KB in base64),
            // alone or among up to 4,800 small cards.
            photoBytes = .random(in: 48...160, using: &random) << 10
            let photos = Int.random(in: 6...24, using: &random)
            photoEvery = Bool.random(using: &random) ? 1 : .random(in: 20...200, using: &random)
            cards = photos * photoEvery
            chunkMin = .random(in: 1...4_096, using: &random)
            chunkMax = chunkMin + .random(in: 1_024...(512 << 10), using: &random)
            // Half the passes as fast as loopback goes, half paced.
            delayMs = Bool.random(using: &random) ? 0 : .random(in: 0.1...2, using: &random)
            conditions = StreamedPassConditions(seed: seed)
            conditions.bufferLimit = [64 << 10, 256 << 10, 1 << 20, 4 << 20].randomElement(using: &random)!
            conditions.consumeDelayMax = Bool.random(using: &random) ? .random(in: 0...0.004, using: &random) : 0
            if Bool.random(using: &random) {
                conditions.ownerBusyEvery = .random(in: 2...20, using: &random)
                conditions.ownerBusyMax = .random(in: 0.001...0.03, using: &random)
            }
            // The owner's thread preempted just before it suspends, as a loaded two-core machine
            // does now and then: for up to 120 ms, long enough for a debug-built parser to
            // drain the backlog meanwhile (what the lost wake-up needed).
            if Bool.random(using: &random) {
                conditions.suspendJitterMax = .random(in: 0.000_05...0.12, using: &random)
            }
        }

        var query: String {
            "cards=\(cards)&photo=\(photoBytes)&photo_every=\(photoEvery)&seed=\(conditions.seed)&chunk_min=\(chunkMin)&chunk_max=\(chunkMax)&delay_ms=\(delayMs)"
        }

        var token: String { "t-\(cards)-\(photoBytes)-\(photoEvery)" }

        var description: String { "/multistatus?\(query) (\(conditions))" }

        /// The unescaped vCard the server sends for card `i`.
        func card(_ i: Int) -> (prefix: String, length: Int) {
            let prefix = "BEGIN:VCARD\r\nVERSION:3.0\r\nUID:card-\(i)\r\nFN:Person \(i)\r\n"
            let end = "END:VCARD\r\n".utf8.count
            guard i % photoEvery == 0 else {
                return (prefix, prefix.utf8.count + "EMAIL;TYPE=work:person-\(i)@example.com\r\nTEL;TYPE=cell:+1-555-\(i)\r\n".utf8.count + end)
            }
            // Folded at 75 octets: each continuation line adds a space and a CRLF.
            let photoLine = "PHOTO;ENCODING=b;TYPE=JPEG:".utf8.count + 4 * ((photoBytes + 2) / 3)
            let continuations = (photoLine - 75 + 73) / 74
            return (prefix, prefix.utf8.count + photoLine + 2 + continuations * 3 + end)
        }
    }

    /// What is wrong with a pass's record; empty when it is whole.
    static func problems(_ record: StreamedPass, _ pass: Pass) -> [String] {
        if let error = record.transferError { return ["transfer failed: \(error)"] }
        guard case .success(let summary)? = record.end else { return ["parse ended with \(String(describing: record.end))"] }
        var problems: [String] = []
        if record.status != 207 { problems.append("status \(String(describing: record.status))") }
        // Every hold was released: the parser read the whole body.
        if record.suspends != record.resumes { problems.append("\(record.suspends) suspends, \(record.resumes) resumes") }
        if summary.syncToken != pass.token { problems.append("token \(String(describing: summary.syncToken))") }
        let hrefs = record.responses.map(\.href)
        if hrefs != (0..<pass.cards).map({ "/book/card-\($0).vcf" }) { problems.append("\(hrefs.count) of \(pass.cards) responses, or out of order") }
        for (i, response) in record.responses.enumerated() where i < pass.cards {
            let data = response.data ?? ""
            let card = pass.card(i)
            if response.etag != "\"e-\(i)\"" || !data.hasPrefix(card.prefix) || !data.hasSuffix("\r\nEND:VCARD\r\n") || data.utf8.count != card.length {
                problems.append("card \(i): etag \(String(describing: response.etag)), \(data.utf8.count) bytes of data, \(card.length) expected")
            }
        }
        return problems
    }

    /// What the passes of a run saw, gathered from the lanes.
    struct Tally {
        var hung: [String] = []
        var broken: [String] = []
        var slowest = 0.0
        var bytes = 0
        var deliveries = 0
        var suspends = 0
    }

    /// Two lanes of passes at once: on two cores the threads of one pass (owner, parser, the
    /// shared curl I/O thread) get preempted by the other's, as in a daemon syncing many stores.
    static let lanes = 2

    @Test func everyStreamedPassEndsWithAllItsResponses() throws {
        let rounds = HangDetector.rounds(default: 100)
        let tally = Mutex(Tally())
        let baseURL = server.baseURL
        DispatchQueue.concurrentPerform(iterations: Self.lanes) { lane in
            for round in stride(from: lane, to: rounds, by: Self.lanes) {
                let pass = Pass(seed: Self.seed &+ UInt64(round))
                let fetch = StreamedMultistatusFetch(url: baseURL + "/multistatus?" + pass.query, conditions: pass.conditions)
                switch HangDetector.run(fetch, bound: Self.bound) {
                case .hung(let seconds):
                    tally.withLock { $0.hung.append("round \(round) after \(Int(seconds)) s: \(pass)") }
                case .finished(let result, let seconds):
                    let record: StreamedPass
                    do {
                        record = try result.get()
                    } catch {
                        tally.withLock { $0.broken.append("round \(round): \(pass): \(error)") }
                        continue
                    }
                    let problems = Self.problems(record, pass)
                    tally.withLock { tally in
                        tally.slowest = max(tally.slowest, seconds)
                        tally.bytes += record.bytes
                        tally.deliveries += record.deliveries
                        tally.suspends += record.suspends
                        if !problems.isEmpty { tally.broken.append("round \(round): \(pass): \(problems.prefix(3).joined(separator: "; "))") }
                    }
                }
            }
        }
        let run = tally.withLock { $0 }
        print("multistatus stress: \(rounds) passes, \(run.bytes >> 20) MB in \(run.deliveries) deliveries, \(run.suspends) suspends, \(run.hung.count) hung, \(run.broken.count) broken, slowest \(String(format: "%.2f", run.slowest)) s")
        #expect(run.hung.isEmpty, "\(run.hung.count) of \(rounds) passes hung:\n\(run.hung.prefix(10).joined(separator: "\n"))")
        #expect(run.broken.isEmpty, "\(run.broken.count) of \(rounds) passes incomplete:\n\(run.broken.prefix(10).joined(separator: "\n"))")
    }
}
