import Foundation
import Synchronization
@testable import FerryKit
import FerryTestSupport

/// What a ``RecordingFetch`` saw.
struct FetchRecord: Sendable {
    var head: ResponseHead?
    var body = Data()
    var chunks = 0
    var largestChunk = 0
    var metrics: TransferMetrics?
    var error: TransferError?
    /// Callbacks that arrived off the operation's own run loop: must stay 0.
    var offLoopCallbacks = 0
    /// Callbacks that arrived after the task was cancelled: must stay 0.
    var callbacksAfterCancel = 0
    /// Body bytes that arrived while the owner held the task suspended.
    var bytesWhileSuspended = 0
    var events: [String] = []
}

/// Runs one or more requests through a RemoteSession on its own run loop and records every
/// callback, checking each arrives on that loop.
final class RecordingFetch: RunLoopOperation<FetchRecord, any Error>, RemoteSessionDelegate, @unchecked Sendable {
    private let requests: [HTTPRequest]
    private let configuration: SessionConfiguration
    /// Sleep this long in each data callback: a slow owner, for backpressure tests.
    var consumeDelay: TimeInterval = 0
    /// Cancel the task once this many body bytes arrived; then finish after a quiet period.
    var cancelAfterBytes: Int?
    /// Suspend the task once this many body bytes arrived, and resume it `suspension` later.
    var suspendAfterBytes: Int?
    var suspension: TimeInterval = 0.5
    private var suspended = false
    private var session: RemoteSession?
    private var record = FetchRecord()
    private var cancelledTask: TransferTask?
    private var remaining: [HTTPRequest] = []

    init(_ requests: [HTTPRequest], configuration: SessionConfiguration = SessionConfiguration()) {
        self.requests = requests
        self.configuration = configuration
        super.init(cancelled: .failure(CancellationError()))
    }

    convenience init(url: String, configuration: SessionConfiguration = SessionConfiguration()) {
        self.init([HTTPRequest(url: url)], configuration: configuration)
    }

    override func run() {
        let session = RemoteSession(configuration: configuration, delegate: self)
        self.session = session
        remaining = requests
        startNext()
    }

    private func startNext() {
        guard !remaining.isEmpty else {
            finish(.success(record))
            return
        }
        let request = remaining.removeFirst()
        do {
            try session!.start(request)
        } catch {
            record.error = error
            finish(.success(record))
        }
    }

    override func cancelRun() {
        session?.cancelAll()
        super.cancelRun()
    }

    private func check(_ task: TransferTask, _ event: String) {
        if runLoopHandle?.isCurrent != true { record.offLoopCallbacks += 1 }
        if task === cancelledTask { record.callbacksAfterCancel += 1 }
        record.events.append(event)
    }

    func session(_ session: RemoteSession, task: TransferTask, didReceive head: ResponseHead) {
        check(task, "head")
        record.head = head
    }

    func session(_ session: RemoteSession, task: TransferTask, didReceive data: Data) {
        check(task, "data")
        record.body.append(data)
        record.chunks += 1
        record.largestChunk = max(record.largestChunk, data.count)
        if suspended { record.bytesWhileSuspended += data.count }
        if consumeDelay > 0 { Thread.sleep(forTimeInterval: consumeDelay) }
        if let limit = suspendAfterBytes, record.body.count >= limit {
            suspendAfterBytes = nil
            suspended = true
            task.suspend()
            // The timer fires on this same loop, where the task may be used.
            let held = UncheckedSendableBox(task)
            _ = Timer.scheduledTimer(withTimeInterval: suspension, repeats: false) { [self] _ in
                self.suspended = false
                self.record.events.append("resume")
                held.value.resume()
            }
        }
        if let limit = cancelAfterBytes, record.body.count >= limit, cancelledTask == nil {
            task.cancel()
            cancelledTask = task
            // Stay on the loop a while so that any stray callback would be seen.
            _ = Timer.scheduledTimer(withTimeInterval: 0.3, repeats: false) { [self] _ in
                self.finish(.success(self.record))
            }
        }
    }

    func session(_ session: RemoteSession, task: TransferTask, didCompleteWith metrics: TransferMetrics) {
        check(task, "complete")
        record.metrics = metrics
        if record.head == nil { record.events.append("no-head") }
        startNext()
    }

    func session(_ session: RemoteSession, task: TransferTask, didFailWith error: TransferError) {
        check(task, "fail")
        record.error = error
        finish(.success(record))
    }

    /// Runs the fetch on a queue and waits for it.
    func runToCompletion() throws -> FetchRecord {
        let queue = OperationQueue()
        queue.addOperations([self], waitUntilFinished: true)
        return try output()
    }
}
