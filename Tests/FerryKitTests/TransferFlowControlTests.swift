import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// What a ``ToggledFetch`` saw.
struct ToggledRecord: Sendable {
    var bytes = 0
    var error: TransferError?
    var toggles = 0
}

/// Downloads a body while another thread suspends and resumes the transfer at random moments,
/// as a parser thread does, ending resumed: whatever the interleaving with libcurl's writes
/// (a resume before the transfer paused, a suspend during a resume), the body must arrive whole.
final class ToggledFetch: RunLoopOperation<ToggledRecord, any Error>, RemoteSessionDelegate, @unchecked Sendable {
    private let url: String
    private let bufferLimit: Int
    private let seed: UInt64
    private var session: RemoteSession?
    private var record = ToggledRecord()
    // The owner's loop only.
    private var togglerDone = false
    private var completed = false

    init(url: String, bufferLimit: Int, seed: UInt64) {
        self.url = url
        self.bufferLimit = bufferLimit
        self.seed = seed
        super.init(cancelled: .failure(CancellationError()))
    }

    override func run() {
        var configuration = SessionConfiguration()
        configuration.bufferLimit = bufferLimit
        configuration.totalTimeout = 120
        let session = RemoteSession(configuration: configuration, delegate: self)
        self.session = session
        do {
            try session.start(HTTPRequest(url: url))
        } catch {
            record.error = error
            finish(.success(record))
        }
    }

    override func cancelRun() {
        session?.cancelAll()
        super.cancelRun()
    }

    func session(_ session: RemoteSession, task: TransferTask, didReceive head: ResponseHead) {
        let flow = task.flowControl
        let seed = seed
        let done = UncheckedSendableBox(self)
        Thread.start(named: "toggler") {
            var random = WebDAVFuzzTests.Generator(state: seed)
            var toggles = 0
            for _ in 0..<Int.random(in: 50...400, using: &random) {
                flow.suspend()
                if Bool.random(using: &random) { usleep(UInt32.random(in: 0...400, using: &random)) }
                flow.resume()
                toggles += 1
                usleep(UInt32.random(in: 0...600, using: &random))
            }
            // The last word is a resume, as a parser's is once it has caught up.
            flow.resume()
            done.value.togglerFinished(toggles)
        }
    }

    private func togglerFinished(_ toggles: Int) {
        _ = perform { [self] in
            self.record.toggles = toggles
            self.togglerDone = true
            if self.completed { self.finish(.success(self.record)) }
        }
    }

    func session(_ session: RemoteSession, task: TransferTask, didReceive data: Data) {
        record.bytes += data.count
    }

    func session(_ session: RemoteSession, task: TransferTask, didCompleteWith metrics: TransferMetrics) {
        completed = true
        if togglerDone { finish(.success(record)) }
    }

    func session(_ session: RemoteSession, task: TransferTask, didFailWith error: TransferError) {
        record.error = error
        finish(.success(record))
    }
}

@Suite("TransferFlowControl from another thread")
final class TransferFlowControlTests {
    let server: TestServer

    init() throws {
        server = try TestServer.fault()
    }

    deinit {
        server.stop()
    }

    /// Suspends and resumes racing libcurl's writes never leave the transfer paused: each body
    /// arrives whole, far within a bound below the timeout (a hang detector).
    @Test func randomSuspendsAndResumesFromAnotherThreadEndWithTheWholeBody() throws {
        var random = WebDAVFuzzTests.Generator(state: 0x70_6613)
        for round in 0..<HangDetector.rounds(default: 40) / 4 {
            let size = Int.random(in: 1...8, using: &random) << 20
            let paced = Bool.random(using: &random)
            let url = paced ? server.baseURL + "/chunked/\(size)?chunk=\(Int.random(in: 1_024...262_144, using: &random))&delay_ms=0.2"
                            : server.baseURL + "/bytes/\(size)"
            let bufferLimit = [64 << 10, 256 << 10, 4 << 20].randomElement(using: &random)!
            let fetch = ToggledFetch(url: url, bufferLimit: bufferLimit, seed: random.next())
            switch HangDetector.run(fetch, bound: 30) {
            case .hung(let seconds):
                Issue.record("round \(round): \(url), buffer \(bufferLimit >> 10) KiB: no end after \(Int(seconds)) s")
            case .finished(let result, _):
                let record = try result.get()
                #expect(record.error == nil, "round \(round): \(url)")
                #expect(record.bytes == size, "round \(round): \(url)")
                #expect(record.toggles > 0)
            }
        }
    }
}
