import FerryKit
import Foundation

/// Fetches `urls` one after another through one ``RemoteSession`` created on the operation's own
/// run loop (so connections are kept alive between requests), counting body bytes and dropping
/// them. The output is the total body bytes received.
///
/// This is the callback path the benchmark measures: libcurl's I/O thread hands every chunk to
/// this operation's loop, where `didReceive data` runs.
final class FetchOperation: RunLoopOperation<Int64, any Error>, RemoteSessionDelegate, @unchecked Sendable {
    private let urls: [String]
    private let configuration: SessionConfiguration
    /// Touched only on the operation's thread.
    private var session: RemoteSession?
    private var nextIndex = 0
    private var bytes: Int64 = 0
    /// New connections libcurl opened for this operation's requests (0 per request when it
    /// reused one). Read after the operation finished.
    private(set) var connectionsOpened = 0

    init(urls: [String], maxResponseBytes: Int64 = 256 << 20) {
        self.urls = urls
        var configuration = SessionConfiguration()
        configuration.maxResponseBytes = maxResponseBytes
        self.configuration = configuration
        super.init(cancelled: .failure(CancellationError()))
    }

    override func run() {
        session = RemoteSession(configuration: configuration, delegate: self)
        startNext()
    }

    private func startNext() {
        guard nextIndex < urls.count, let session else {
            finish(.success(bytes))
            return
        }
        let url = urls[nextIndex]
        nextIndex += 1
        do {
            try session.start(HTTPRequest(url: url))
        } catch {
            finish(.failure(BenchError.transferFailed("\(url): \(error)")))
        }
    }

    override func cancelRun() {
        session?.cancelAll()
        super.cancelRun()
    }

    func session(_ session: RemoteSession, task: TransferTask, didReceive head: ResponseHead) {}

    func session(_ session: RemoteSession, task: TransferTask, didReceive data: Data) {
        bytes += Int64(data.count)
    }

    func session(_ session: RemoteSession, task: TransferTask, didCompleteWith metrics: TransferMetrics) {
        guard metrics.status == 200 else {
            finish(.failure(BenchError.transferFailed("\(task.request.url): status \(metrics.status)")))
            return
        }
        connectionsOpened += metrics.newConnections
        startNext()
    }

    func session(_ session: RemoteSession, task: TransferTask, didFailWith error: TransferError) {
        finish(.failure(BenchError.transferFailed("\(task.request.url): \(error)")))
    }
}
