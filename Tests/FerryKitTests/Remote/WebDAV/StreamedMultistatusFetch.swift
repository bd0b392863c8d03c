import Foundation
import Synchronization
@testable import FerryKit
import FerryTestSupport

/// What one streamed multistatus GET saw.
struct StreamedPass: Sendable {
    var status: Int?
    var bytes = 0
    var deliveries = 0
    var responses: [Multistatus.Response] = []
    var end: Result<Multistatus, MultistatusParser.Failure>?
    var transferError: TransferError?
    /// Suspend and resume requests the stream made, read when it ended.
    var suspends = 0
    var resumes = 0
}

/// How a ``StreamedMultistatusFetch`` makes its owner and its flow control misbehave, all drawn
/// from one seed so a failing pass can be replayed.
struct StreamedPassConditions: Sendable, CustomStringConvertible {
    var seed: UInt64
    /// The session's ``SessionConfiguration/bufferLimit``: below the body's size, the transfer
    /// is still reading when the stream suspends it.
    var bufferLimit = SessionConfiguration().bufferLimit
    /// Each group of responses costs the owner up to this long (a merge into SQLite).
    var consumeDelayMax: TimeInterval = 0
    /// One delivery in `ownerBusyEvery` keeps the owner busy for up to `ownerBusyMax` before it
    /// feeds the stream, so the session batches a large delivery meanwhile (0: never).
    var ownerBusyEvery = 0
    var ownerBusyMax: TimeInterval = 0
    /// Suspend requests are delayed by up to this long, as a feeding thread preempted between
    /// deciding and suspending would be (0: not delayed).
    var suspendJitterMax: TimeInterval = 0

    var description: String {
        let ms = { (seconds: TimeInterval) in String(format: "%.1f ms", seconds * 1000) }
        return "seed \(seed), buffer \(bufferLimit >> 10) KiB, group delay ≤\(ms(consumeDelayMax)), busy owner 1 delivery in \(ownerBusyEvery) ≤\(ms(ownerBusyMax)), suspend delay ≤\(ms(suspendJitterMax))"
    }
}

/// A transfer's flow control that counts requests and whose suspends may arrive late, by a
/// random pause.
final class JitteredFlow: FlowControl, @unchecked Sendable {
    private struct State {
        var random: WebDAVFuzzTests.Generator
        var suspends = 0
        var resumes = 0
    }

    private let base: any FlowControl
    private let maxDelay: TimeInterval
    private let state: Mutex<State>

    init(_ base: any FlowControl, maxDelay: TimeInterval, seed: UInt64) {
        self.base = base
        self.maxDelay = maxDelay
        state = Mutex(State(random: WebDAVFuzzTests.Generator(state: seed)))
    }

    func suspend() {
        let delay: TimeInterval = state.withLock { state in
            state.suspends += 1
            return maxDelay > 0 ? .random(in: 0...maxDelay, using: &state.random) : 0
        }
        if delay > 0 { Thread.sleep(forTimeInterval: delay) }
        base.suspend()
    }

    func resume() {
        state.withLock { $0.resumes += 1 }
        base.resume()
    }

    var counts: (suspends: Int, resumes: Int) { state.withLock { ($0.suspends, $0.resumes) } }
}

/// GETs a multistatus through a real ``RemoteSession`` and parses it while it downloads, as
/// ``WebDAVSource`` does: the stream suspends and resumes the transfer through its flow control.
final class StreamedMultistatusFetch: RunLoopOperation<StreamedPass, any Error>, RemoteSessionDelegate, @unchecked Sendable {
    private let url: String
    private let conditions: StreamedPassConditions
    private var random: WebDAVFuzzTests.Generator
    private var session: RemoteSession?
    private var stream: MultistatusStream?
    private var record = StreamedPass()

    init(url: String, conditions: StreamedPassConditions) {
        self.url = url
        self.conditions = conditions
        random = WebDAVFuzzTests.Generator(state: conditions.seed)
        super.init(cancelled: .failure(CancellationError()))
    }

    override func run() {
        var configuration = SessionConfiguration()
        // Far above the hang detector's bound: a held transfer is found by the detector, not
        // turned into a transfer error.
        configuration.totalTimeout = 120
        configuration.bufferLimit = conditions.bufferLimit
        let session = RemoteSession(configuration: configuration, delegate: self)
        self.session = session
        do {
            try session.start(HTTPRequest(url: url))
        } catch {
            record.transferError = error
            finish(.success(record))
        }
    }

    override func cancelRun() {
        session?.cancelAll()
        stream?.cancel()
        stream = nil
        super.cancelRun()
    }

    func session(_ session: RemoteSession, task: TransferTask, didReceive head: ResponseHead) {
        record.status = head.status
        let flow = JitteredFlow(task.flowControl, maxDelay: conditions.suspendJitterMax, seed: conditions.seed ^ 0xF10)
        stream = MultistatusStream(parser: MultistatusParser(maxDataBytes: 4 << 20), name: "stress", flow: flow, handlers: .init(
            responses: { [unowned self] responses in
                self.record.responses += responses
                if self.conditions.consumeDelayMax > 0 {
                    Thread.sleep(forTimeInterval: .random(in: 0...self.conditions.consumeDelayMax, using: &self.random))
                }
            },
            end: { [unowned self] outcome in
                self.record.end = outcome
                (self.record.suspends, self.record.resumes) = flow.counts
                self.finish(.success(self.record))
            }))
    }

    func session(_ session: RemoteSession, task: TransferTask, didReceive data: Data) {
        record.bytes += data.count
        record.deliveries += 1
        if conditions.ownerBusyEvery > 0, Int.random(in: 0..<conditions.ownerBusyEvery, using: &random) == 0 {
            Thread.sleep(forTimeInterval: .random(in: 0...conditions.ownerBusyMax, using: &random))
        }
        stream?.feed(data)
    }

    func session(_ session: RemoteSession, task: TransferTask, didCompleteWith metrics: TransferMetrics) {
        stream?.finish()
    }

    func session(_ session: RemoteSession, task: TransferTask, didFailWith error: TransferError) {
        record.transferError = error
        stream?.cancel()
        stream = nil
        finish(.success(record))
    }
}
