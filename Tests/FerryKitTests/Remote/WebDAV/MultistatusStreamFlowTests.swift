import Foundation
import Synchronization
import Testing
@testable import FerryKit
import FerryTestSupport

/// A transfer as a ``MultistatusStream`` sees it: held or flowing, and the call that reaches it
/// last wins, as with ``CurlTransfer``'s hold and release. Its first `delayedSuspends`
/// suspends take effect only after a pause of up to `delay` (or as soon as a resume arrives
/// meanwhile): a feeding thread preempted between deciding to suspend and suspending, which a
/// busy two-core machine does now and then, is here every time.
final class DelayedSuspendFlow: FlowControl, @unchecked Sendable {
    private let condition = NSCondition()
    private var held = false
    private var resumes = 0
    private var suspends = 0
    private var delayedSuspends: Int
    private let delay: TimeInterval

    init(delayedSuspends: Int, delay: TimeInterval) {
        self.delayedSuspends = delayedSuspends
        self.delay = delay
    }

    func suspend() {
        condition.lock()
        defer { condition.unlock() }
        if delayedSuspends > 0 {
            delayedSuspends -= 1
            let resumesBefore = resumes
            let deadline = Date().addingTimeInterval(delay)
            while resumes == resumesBefore, condition.wait(until: deadline) {}
        }
        suspends += 1
        held = true
    }

    func resume() {
        condition.lock()
        defer { condition.unlock() }
        resumes += 1
        held = false
        condition.broadcast()
    }

    var isHeld: Bool { condition.withLock { held } }
    var counts: (suspends: Int, resumes: Int) { condition.withLock { (suspends, resumes) } }
}

/// Owns a stream the way a fast transfer feeds one: a chunk per loop turn while the flow is
/// not held, none while it is (a held transfer delivers nothing more).
final class HeldFeeder: RunLoopOperation<StreamRecord, any Error>, @unchecked Sendable {
    private let body: [UInt8]
    private let chunk: Int
    let flow: DelayedSuspendFlow
    private var stream: MultistatusStream?
    private var record = StreamRecord()
    private let fedBytes = Mutex(0)

    init(body: [UInt8], chunk: Int, flow: DelayedSuspendFlow) {
        self.body = body
        self.chunk = chunk
        self.flow = flow
        super.init(cancelled: .failure(CancellationError()))
    }

    /// Bytes fed so far, from any thread.
    var fed: Int { fedBytes.withLock { $0 } }

    override func run() {
        stream = MultistatusStream(parser: MultistatusParser(maxDataBytes: 1 << 20), name: "flow", flow: flow, handlers: .init(
            responses: { [unowned self] in self.record.responses += $0 },
            end: { [unowned self] in
                self.record.end = $0
                self.finish(.success(self.record))
            }))
        feedWhileFlowing()
    }

    /// Feeds a chunk per loop turn (the turns between hand the parsed groups over, as between
    /// a session's deliveries) while the flow is not held; while it is, looks again every 2 ms.
    private func feedWhileFlowing() {
        guard let stream else { return }
        if flow.isHeld {
            _ = Timer.scheduledTimer(withTimeInterval: 0.002, repeats: false) { [self] _ in self.feedWhileFlowing() }
            return
        }
        let start = fed
        guard start < body.count else {
            stream.finish()
            return
        }
        let end = min(body.count, start + chunk)
        stream.feed(Data(body[start..<end]))
        fedBytes.withLock { $0 = end }
        _ = perform { [self] in self.feedWhileFlowing() }
    }

    override func cancelRun() {
        stream?.cancel()
        stream = nil
        super.cancelRun()
    }
}

@Suite struct MultistatusStreamFlowTests {
    /// A multiget-like answer of `count` vCards, each with a base64 PHOTO of about
    /// `photoBytes` bytes (what makes a collection query answer several MB).
    static func photoBody(cards count: Int, photoBytes: Int) -> [UInt8] {
        var text = #"<?xml version="1.0" encoding="utf-8"?><multistatus xmlns="DAV:" xmlns:C="urn:ietf:params:xml:ns:carddav">"#
        let line = String(repeating: "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo", count: 2)
        for i in 0..<count {
            var photo = ""
            while photo.utf8.count < photoBytes { photo += " " + line + "\r\n" }
            let card = "BEGIN:VCARD\r\nVERSION:3.0\r\nUID:card-\(i)\r\nFN:Person \(i)\r\nPHOTO;ENCODING=b;TYPE=JPEG:\r\n\(photo)END:VCARD\r\n"
            text += "<response><href>/book/card-\(i).vcf</href><propstat><prop><getetag>\"e\(i)\"</getetag><C:address-data>\(card)</C:address-data></prop><status>HTTP/1.1 200 OK</status></propstat></response>"
        }
        text += "<sync-token>t-photos</sync-token></multistatus>"
        return Array(text.utf8)
    }

    /// The lost wake-up: the feeder crosses the high-water mark and is about to suspend the
    /// transfer when the parser drains the backlog to the low-water mark and resumes it. If
    /// the two decisions were not serialized, the resume (finding nothing paused) would go
    /// first and the suspend would then hold the transfer with nothing left to release it.
    @Test func aSuspendOvertakenByTheParsersResumeDoesNotHoldTheTransferForever() throws {
        let body = Self.photoBody(cards: 40, photoBytes: 40 << 10)
        #expect(body.count > MultistatusStream.highWater + (256 << 10))
        let flow = DelayedSuspendFlow(delayedSuspends: 1, delay: 0.5)
        // One delivery larger than the high-water mark (a session batches what arrived while its
        // owner was busy), so the parser, waiting for bytes, has all of it at once.
        let feeder = HeldFeeder(body: body, chunk: MultistatusStream.highWater + (64 << 10), flow: flow)
        switch HangDetector.run(feeder, bound: 10) {
        case .hung:
            Issue.record("stalled after feeding \(feeder.fed) of \(body.count) bytes; transfer held: \(flow.isHeld), suspends and resumes: \(flow.counts)")
        case .finished(let result, _):
            let record = try result.get()
            #expect(record.responses.map(\.href) == (0..<40).map { "/book/card-\($0).vcf" })
            guard case .success(let summary) = record.end else {
                Issue.record("stream failed: \(String(describing: record.end))")
                return
            }
            #expect(summary.syncToken == "t-photos")
            #expect(!flow.isHeld)
            #expect(flow.counts.suspends >= 1 && flow.counts.resumes == flow.counts.suspends)
        }
    }

    /// The hysteresis, as a table: held above the high-water mark, released at the low one,
    /// unchanged in between.
    @Test func theSourceIsHeldAboveTheHighMarkAndReleasedAtTheLowOne() {
        typealias Stream = FedInputStream
        let cases: [(Stream.SourceState, Int, Stream.SourceState)] = [
            (.flowing, 0, .flowing), (.flowing, 100, .flowing), (.flowing, 101, .held),
            (.held, 101, .held), (.held, 11, .held), (.held, 10, .flowing), (.held, 0, .flowing),
            (.flowing, 50, .flowing), (.held, 50, .held),
        ]
        for (state, buffered, expected) in cases {
            #expect(Stream.sourceState(after: state, buffered: buffered, highWater: 100, lowWater: 10) == expected, "\(state) with \(buffered) waiting")
        }
    }

    /// The stream itself suspends when an append crosses the high-water mark and resumes when
    /// reads bring it down to the low one; a reader that stops early releases a held source.
    @Test func theInputStreamSteersItsSource() {
        let flow = RecordingFlow()
        let input = FedInputStream(highWater: 100, lowWater: 10, flow: flow, beforeWaiting: {})
        input.append(Data(count: 60))
        #expect(flow.events == [])
        input.append(Data(count: 60))
        input.append(Data(count: 60))
        #expect(flow.events == [false])
        var buffer = [UInt8](repeating: 0, count: 50)
        // One chunk at a time: 130 bytes wait, then 120, 70, 60, and 10, the low mark.
        #expect(input.read(&buffer, maxLength: 50) == 50)
        #expect(input.read(&buffer, maxLength: 50) == 10)
        #expect(input.read(&buffer, maxLength: 50) == 50)
        #expect(input.read(&buffer, maxLength: 50) == 10)
        #expect(flow.events == [false])
        #expect(input.read(&buffer, maxLength: 50) == 50)
        #expect(flow.events == [false, true])
        input.append(Data(count: 200))
        #expect(flow.events == [false, true, false])
        input.readerFinished()
        #expect(flow.events == [false, true, false, true])
        input.append(Data(count: 200))   // nobody reads: dropped, nothing held
        #expect(flow.events == [false, true, false, true])
    }
}

