import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// What an owner of a ``MultistatusStream`` saw.
struct StreamRecord: Sendable {
    var responses: [Multistatus.Response] = []
    var groups = 0
    var end: Result<Multistatus, MultistatusParser.Failure>?
    /// Flow requests in order: false = suspend, true = resume.
    var flow: [Bool] = []
    /// The most response groups queued on the owner's loop at once.
    var mostGroupsAhead = 0
    var offLoopCalls = 0
    var callsAfterEnd = 0
}

/// Owns one stream on its own run loop, as the WebDAV source does: feeds `body` in `chunks`
/// (all at once, or one per loop turn), then finishes it, and records every handler call.
final class StreamOwner: RunLoopOperation<StreamRecord, any Error>, @unchecked Sendable {
    private let body: [UInt8]
    private let chunks: [Int]
    private let feedAllAtOnce: Bool
    /// Cancel the stream once this many bytes are fed; the record is taken 0.3 s later.
    var cancelAfterBytes: Int?
    /// Sleep this long for each group of responses: an owner busy merging.
    var consumeDelay: TimeInterval = 0
    private let flow = RecordingFlow()
    private var stream: MultistatusStream?
    private var record = StreamRecord()
    private var fed = 0
    private var chunkIndex = 0
    private var ended = false
    /// The stream after cancel(), to see that it goes away (its parser thread ended).
    let cancelled = WeakStream()

    init(body: [UInt8], chunks: [Int], feedAllAtOnce: Bool = false) {
        self.body = body
        self.chunks = chunks
        self.feedAllAtOnce = feedAllAtOnce
        super.init(cancelled: .failure(CancellationError()))
    }

    override func run() {
        stream = MultistatusStream(parser: MultistatusParser(maxDataBytes: 1 << 20), name: "test", flow: flow, handlers: .init(
            responses: { [unowned self] in
                self.check()
                self.record.responses += $0
                self.record.groups += 1
                if self.consumeDelay > 0 { Thread.sleep(forTimeInterval: self.consumeDelay) }
            },
            end: { [unowned self] in
                self.check()
                self.record.end = $0
                self.record.flow = self.flow.events
                self.record.mostGroupsAhead = self.stream?.mostGroupsAhead ?? 0
                self.ended = true
                self.finish(.success(self.record))
            }))
        if feedAllAtOnce {
            while feedNext() {}
        } else {
            feedOnNextTurn()
        }
    }

    private func check() {
        if runLoopHandle?.isCurrent != true { record.offLoopCalls += 1 }
        if ended { record.callsAfterEnd += 1 }
    }

    private func feedOnNextTurn() {
        _ = perform { [self] in
            if self.feedNext() { self.feedOnNextTurn() }
        }
    }

    /// Feeds one chunk; false once everything is fed (and the stream finished or cancelled).
    private func feedNext() -> Bool {
        guard let stream else { return false }
        if fed >= body.count {
            stream.finish()
            return false
        }
        let size = max(1, chunks[chunkIndex % chunks.count])
        chunkIndex += 1
        let end = min(body.count, fed + size)
        stream.feed(Data(body[fed..<end]))
        fed = end
        if let limit = cancelAfterBytes, fed >= limit {
            stream.cancel()
            cancelled.set(stream)
            self.stream = nil
            ended = true
            _ = Timer.scheduledTimer(withTimeInterval: 0.3, repeats: false) { [self] _ in
                self.finish(.success(self.record))
            }
            return false
        }
        return true
    }

    func runToCompletion() throws -> StreamRecord {
        let queue = OperationQueue()
        queue.addOperations([self], waitUntilFinished: true)
        return try output()
    }
}

/// Records the stream's suspend (false) and resume (true) requests, from whichever thread.
final class RecordingFlow: FlowControl, @unchecked Sendable {
    private let lock = NSLock()
    private var recorded: [Bool] = []

    func suspend() { lock.withLock { recorded.append(false) } }
    func resume() { lock.withLock { recorded.append(true) } }
    var events: [Bool] { lock.withLock { recorded } }
}

/// Watches an object without keeping it alive.
final class WeakStream: @unchecked Sendable {
    private let lock = NSLock()
    private weak var stream: MultistatusStream?
    private var set = false

    func set(_ stream: MultistatusStream) {
        lock.withLock {
            self.stream = stream
            set = true
        }
    }

    var wasSet: Bool { lock.withLock { set } }
    var isGone: Bool { lock.withLock { stream == nil } }
}

@Suite struct MultistatusStreamTests {
    typealias Generator = WebDAVFuzzTests.Generator

    /// A multiget-like answer with `count` vCards of about 500 bytes, Radicale's token first.
    static func body(cards count: Int, insert: String = "", at insertAt: Int = -1) -> [UInt8] {
        var text = #"<?xml version='1.0' encoding='utf-8'?><multistatus xmlns="DAV:" xmlns:C="urn:ietf:params:xml:ns:carddav"><sync-token>t-1</sync-token>"#
        for i in 0..<count {
            if i == insertAt { text += insert }
            let card = "BEGIN:VCARD\r\nVERSION:3.0\r\nUID:card-\(i)\r\nFN:Person \(i) &amp; Co\r\nNOTE:" + String(repeating: "note \(i) ", count: 40) + "\r\nEND:VCARD\r\n"
            text += "<response><href>/book/card-\(i).vcf</href><propstat><prop><getetag>\"e\(i)\"</getetag><C:address-data>\(card)</C:address-data></prop><status>HTTP/1.1 200 OK</status></propstat></response>"
        }
        text += "</multistatus>"
        return Array(text.utf8)
    }

    static func wholeParse(_ body: [UInt8]) throws -> Multistatus {
        try MultistatusParser(maxDataBytes: 1 << 20).parse(Data(body))
    }

    @Test func streamedResponsesAndSummaryEqualTheWholeParse() throws {
        var random = Generator(state: WebDAVFuzzTests.seed ^ 0x57EA)
        let bodies = WebDAVFuzzTests.multistatusCorpus.map { Array($0.utf8) } + [Self.body(cards: 300)]
        for body in bodies {
            let whole = try Self.wholeParse(body)
            for _ in 0..<3 {
                let chunks = (0..<8).map { _ in Int.random(in: 1...5_000, using: &random) }
                let record = try StreamOwner(body: body, chunks: chunks).runToCompletion()
                #expect(record.offLoopCalls == 0 && record.callsAfterEnd == 0)
                #expect(record.responses == whole.responses, "chunks \(chunks)")
                guard case .success(let summary) = record.end else {
                    Issue.record("stream failed: \(String(describing: record.end))")
                    continue
                }
                #expect(summary.responses.isEmpty)
                #expect(summary.root == whole.root && summary.syncToken == whole.syncToken && summary.errors == whole.errors)
                #expect(summary.isTruncated == whole.isTruncated && summary.hasInvalidSyncToken == whole.hasInvalidSyncToken)
            }
        }
    }

    /// Fed faster than it parses, the stream asks its owner to suspend the transfer once, and
    /// to resume it when the parser has caught up: the bytes waiting never grow unbounded.
    @Test func aBodyFedFasterThanParsedAsksToSuspendThenResume() throws {
        let body = Self.body(cards: 6_000)   // about 4 MB
        #expect(body.count > 3 * MultistatusStream.highWater)
        let record = try StreamOwner(body: body, chunks: [64 << 10], feedAllAtOnce: true).runToCompletion()
        #expect(record.responses.count == 6_000)
        #expect(record.flow == [false, true])
        // Handed over in groups, not one response at a time, nor all at the end.
        #expect(record.groups >= 6_000 / MultistatusStream.groupSize && record.groups < 6_000)
        if case .success = record.end {} else { Issue.record("\(String(describing: record.end))") }
    }

    /// An owner slower than the parser (busy merging) holds the parser back: it never gets
    /// more than a few groups ahead, so parsed responses do not pile up either.
    @Test func aSlowOwnerHoldsTheParserBack() throws {
        let body = Self.body(cards: 2_000)
        let owner = StreamOwner(body: body, chunks: [64 << 10], feedAllAtOnce: true)
        owner.consumeDelay = 0.002
        let record = try owner.runToCompletion()
        #expect(record.responses.count == 2_000)
        #expect(record.mostGroupsAhead == MultistatusStream.maxGroupsAhead, "\(record.mostGroupsAhead)")
        #expect(record.flow.first == false && record.flow.last == true)
    }

    @Test func bytesTheScreenRefusesEndTheStreamAfterTheResponsesBeforeThem() throws {
        let body = Self.body(cards: 50, insert: "\n<?x?>", at: 40)
        // The instruction starts a line: one line after every newline before it.
        let marker = try #require(String(decoding: body, as: UTF8.self).range(of: "\n<?x?>"))
        let line = String(decoding: body, as: UTF8.self)[..<marker.upperBound].filter { $0 == "\n" || $0 == "\r\n" }.count + 1
        for chunks in [[700, 33, 4096], [1 << 20], [1]] {
            let record = try StreamOwner(body: body, chunks: chunks).runToCompletion()
            #expect(record.responses.map(\.href) == (0..<40).map { "/book/card-\($0).vcf" }, "chunks \(chunks)")
            guard case .failure(let failure) = record.end else {
                Issue.record("expected a failure, got \(String(describing: record.end))")
                return
            }
            #expect(failure.line == line && failure.column == 1, "\(failure)")
            #expect(failure.message.hasPrefix("processing instruction without data"))
            #expect(record.callsAfterEnd == 0)
        }
    }

    @Test func malformedXMLFailsWithAPosition() throws {
        let body = Self.body(cards: 20, insert: "<response><href>/book/x.vcf</wrong></response>", at: 10)
        let record = try StreamOwner(body: body, chunks: [512]).runToCompletion()
        guard case .failure(let failure) = record.end else {
            Issue.record("expected a failure, got \(String(describing: record.end))")
            return
        }
        #expect(failure.line >= 1 && failure.column > 0)
        #expect(record.responses.count <= 10)
    }

    @Test func invalidUTF8CutByTheEndOfTheBodyFails() throws {
        let body = Array(#"<multistatus xmlns="DAV:"><sync-token>t"#.utf8) + [0xE2, 0x82]
        let record = try StreamOwner(body: body, chunks: [10]).runToCompletion()
        guard case .failure(let failure) = record.end else {
            Issue.record("expected a failure, got \(String(describing: record.end))")
            return
        }
        #expect(failure.message == "body is not valid UTF-8")
    }

    /// After cancel() nothing reaches the owner, and the stream goes away: its parser thread,
    /// which was waiting for bytes, ended.
    @Test func cancelMidBodyStopsTheParser() throws {
        let body = Self.body(cards: 2_000)
        let owner = StreamOwner(body: body, chunks: [8 << 10])
        owner.cancelAfterBytes = body.count / 2
        let record = try owner.runToCompletion()
        #expect(record.end == nil)
        #expect(record.callsAfterEnd == 0)
        #expect(record.responses.count < 2_000)
        #expect(owner.cancelled.wasSet)
        var waited = 0.0
        while !owner.cancelled.isGone, waited < 5 {
            Thread.sleep(forTimeInterval: 0.05)
            waited += 0.05
        }
        #expect(owner.cancelled.isGone, "the stream (and its parser thread) outlived cancel() by 5 s")
    }
}
