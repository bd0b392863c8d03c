import Foundation

/// Fetches one whole response body at a time on the owner's run loop, for the JSON kinds.
///
/// Pages are parsed whole (the scanner needs the complete page to validate it before anything
/// is handed over), so the loader only gathers chunks. The sources pipeline by starting the
/// next load right after parsing a page and before handing that page to the sink; a load never
/// overlaps another, so one task is in flight at most.
final class HTTPPageLoader: RemoteSessionDelegate {
    struct Page {
        let request: HTTPRequest
        let head: ResponseHead
        let body: Data

        /// Where the page came from: the request's URL, or where its redirects ended. Relative
        /// links on the page are relative to it.
        var url: String { head.redirects > 0 ? head.url : request.url }
    }

    typealias Completion = (Result<Page, TransferError>) -> Void

    fileprivate enum State {
        case idle
        case loading(TransferTask, head: ResponseHead?, body: Data, completion: Completion)
        /// A request libcurl refused at once; reported from a timer so never inside `load`.
        case refused(Timer)
        case cancelled
    }

    private let configuration: SessionConfiguration
    /// Parameters set on every request URL (the store's `query.NAME`), secrets among them:
    /// added to the URL that is sent, never to the one a ``Page`` reports.
    private let query: ConfiguredQuery
    private var session: RemoteSession?
    fileprivate var state = State.idle
    /// Requests started, for ``SourceOutcome/requests``.
    private(set) var requestCount = 0

    init(configuration: SessionConfiguration, query: ConfiguredQuery = ConfiguredQuery()) {
        self.configuration = configuration
        self.query = query
    }

    var isCancelled: Bool {
        if case .cancelled = state { true } else { false }
    }

    /// Starts a request; `completion` runs later on this run loop, exactly once, unless
    /// ``cancel()`` is called first. `configuredQuery`: whether the store's `query.NAME`
    /// parameters go with it (not to a page on another origin).
    func load(_ request: HTTPRequest, configuredQuery: Bool = true, completion: @escaping Completion) {
        switch state {
        case .idle: break
        case .cancelled: return
        case .loading, .refused: preconditionFailure("HTTPPageLoader: one load at a time")
        }
        let session = self.session ?? RemoteSession(configuration: configuration, delegate: self)
        self.session = session
        requestCount += 1
        var sent = request
        if configuredQuery { sent.url = query.apply(to: request.url) }
        do {
            let task = try session.start(sent)
            var body = Data()
            body.reserveCapacity(1 << 16)
            state = .loading(task, head: nil, body: body, completion: completion)
        } catch {
            // The timer fires on this thread's loop (added below), the loader's own thread, so
            // handing it the non-Sendable loader is safe.
            let box = LoopBound(self, completion)
            let timer = Timer(timeInterval: 0, repeats: false) { _ in
                guard case .refused = box.loader.state else { return }
                box.loader.state = .idle
                box.completion(.failure(error))
            }
            RunLoop.current.add(timer, forMode: .default)
            state = .refused(timer)
        }
    }

    /// Stops the request in flight; no completion runs after this returns.
    func cancel() {
        switch state {
        case .loading(let task, _, _, _): task.cancel()
        case .refused(let timer): timer.invalidate()
        case .idle, .cancelled: break
        }
        state = .cancelled
    }

    func session(_ session: RemoteSession, task: TransferTask, didReceive head: ResponseHead) {
        guard case .loading(let current, _, let body, let completion) = state, current === task else { return }
        state = .loading(current, head: head, body: body, completion: completion)
    }

    func session(_ session: RemoteSession, task: TransferTask, didReceive data: Data) {
        guard case .loading(let current, let head, var body, let completion) = state, current === task else { return }
        // Release the state's reference first so the append does not copy the buffer.
        state = .idle
        body.append(data)
        state = .loading(current, head: head, body: body, completion: completion)
    }

    func session(_ session: RemoteSession, task: TransferTask, didCompleteWith metrics: TransferMetrics) {
        guard case .loading(let current, let head, let body, let completion) = state, current === task else { return }
        state = .idle
        let shown = query.removingSecrets(from: task.request.url)
        let finalHead = head ?? ResponseHead(status: metrics.status, headers: HTTPHeaders(), url: shown.redactingUserInfo)
        var request = task.request
        request.url = shown
        completion(.success(Page(request: request, head: finalHead, body: body)))
    }

    func session(_ session: RemoteSession, task: TransferTask, didFailWith error: TransferError) {
        guard case .loading(let current, _, _, let completion) = state, current === task else { return }
        state = .idle
        completion(.failure(error))
    }
}

/// Carries the loader into a timer that fires on the loader's own run loop.
private struct LoopBound: @unchecked Sendable {
    let loader: HTTPPageLoader
    let completion: HTTPPageLoader.Completion

    init(_ loader: HTTPPageLoader, _ completion: @escaping HTTPPageLoader.Completion) {
        self.loader = loader
        self.completion = completion
    }
}

extension HTTPPageLoader.Page {
    /// The error this non-2xx page stands for (``HTTPStatusClassifier``).
    func statusError(target: HTTPStatusClassifier.Target, position: String = "", context: HTTPStatusClassifier.Context) -> SyncError {
        HTTPStatusClassifier.error(status: head.status, headers: head.headers, body: body, url: url, target: target,
                                   position: position, context: context, credentialsWithheld: head.credentialsWithheld)
    }

    /// The error for a 2xx page whose body is not the JSON expected.
    func malformedJSON(_ error: JSONScanError, store: String) -> SyncError {
        SyncError(malformedJSON: error, status: head.status, contentType: head.headers["Content-Type"], url: url, store: store)
    }
}
