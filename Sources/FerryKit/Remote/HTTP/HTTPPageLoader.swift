import Foundation
import Logging

/// Fetches one whole response body at a time on the owner's run loop, for the JSON kinds.
///
/// Pages are parsed whole (the scanner needs the complete page to validate it before anything
/// is handed over), so the loader only gathers chunks. The sources pipeline by starting the
/// next load right after parsing a page and before handing that page to the sink; a load never
/// overlaps another, so one task is in flight at most.
///
/// A read that fails as ``ReadRetry`` allows (a 503, a reset connection, a short rate limit) is
/// asked again after its wait, within the same load: the completion sees the last attempt
/// only, and ``onRetry`` tells the owner about each retry (the journal says so).
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

    /// One retry, as the owner reports it.
    struct Retry: Sendable {
        /// The request's URL as it may be shown (no configured secrets, no user info).
        var url: String
        var because: String
        var after: Duration
        /// 1 for the first retry of the request.
        var number: Int
        var of: Int
    }

    fileprivate enum State {
        case idle
        case loading(TransferTask, head: ResponseHead?, body: Data, completion: Completion)
        /// A request libcurl refused at once; reported from a timer so never inside `load`.
        case refused(Timer)
        /// Waiting to ask a failed read again.
        case waiting(Timer)
        case cancelled
    }

    private let configuration: SessionConfiguration
    /// Parameters set on every request URL (the store's `query.NAME`), secrets among them:
    /// added to the URL that is sent, never to the one a ``Page`` reports.
    private let query: ConfiguredQuery
    private let retry: ReadRetry
    /// Called on this loop before each retry's wait.
    var onRetry: ((Retry) -> Void)?
    private var session: RemoteSession?
    fileprivate var state = State.idle
    /// Requests started, retries included, for ``SourceOutcome/requests``.
    private(set) var requestCount = 0
    /// Retries made so far by this loader.
    private(set) var retryCount = 0
    /// The load in progress: what to send again, and how often it was.
    private var current: (request: HTTPRequest, configuredQuery: Bool, retries: Int)?

    /// `retry`: when reads are asked again (``ReadRetry``); a loader that writes passes
    /// ``ReadRetry/never`` or relies on reads alone being retried.
    init(configuration: SessionConfiguration, query: ConfiguredQuery = ConfiguredQuery(), retry: ReadRetry = .never) {
        self.configuration = configuration
        self.query = query
        self.retry = retry
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
        case .loading, .refused, .waiting: preconditionFailure("HTTPPageLoader: one load at a time")
        }
        current = (request, configuredQuery, 0)
        send(request, configuredQuery: configuredQuery, completion: completion)
    }

    private func send(_ request: HTTPRequest, configuredQuery: Bool, completion: @escaping Completion) {
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
        case .refused(let timer), .waiting(let timer): timer.invalidate()
        case .idle, .cancelled: break
        }
        state = .cancelled
    }

    /// Whether the failed attempt is asked again: then the wait is armed and the completion
    /// is kept for the next attempt.
    private func retries(after failure: ReadRetry.Failure, completion: @escaping Completion) -> Bool {
        guard let load = current, load.request.isReadOnly,
              case .retry(let wait, let because) = retry.decide(after: failure, retries: load.retries) else { return false }
        current?.retries += 1
        retryCount += 1
        onRetry?(Retry(url: query.removingSecrets(from: load.request.url).redactingUserInfo, because: because, after: wait,
                       number: load.retries + 1, of: retry.maxRetries))
        // `Timer(fire:interval:repeats:)`: a non-repeating timer made with a time interval
        // fires at once here (swift-corelibs-foundation).
        let box = LoopBound(self, completion)
        let timer = Timer(fire: Date().addingTimeInterval(wait.seconds), interval: 0, repeats: false) { _ in
            guard case .waiting = box.loader.state, let again = box.loader.current else { return }
            box.loader.state = .idle
            box.loader.send(again.request, configuredQuery: again.configuredQuery, completion: box.completion)
        }
        RunLoop.current.add(timer, forMode: .default)
        state = .waiting(timer)
        return true
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
        if !(200..<400).contains(finalHead.status), retries(after: .status(finalHead.status, headers: finalHead.headers, body: body), completion: completion) {
            return
        }
        var request = task.request
        request.url = shown
        completion(.success(Page(request: request, head: finalHead, body: body)))
    }

    func session(_ session: RemoteSession, task: TransferTask, didFailWith error: TransferError) {
        guard case .loading(let current, _, _, let completion) = state, current === task else { return }
        state = .idle
        if retries(after: .transfer(error.kind), completion: completion) { return }
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

extension HTTPPageLoader {
    /// Says each retry in the journal, for `store`: the pass that waits a few seconds on a 503
    /// says why, and a remote that keeps failing shows in the log before the pass gives up.
    func reportRetries(to logger: Logger, store: String) {
        onRetry = { retry in
            logger.notice("store \(store): \(retry.because) at \(retry.url); asking again in \(ConfigurationUnits.format(retry.after)) (retry \(retry.number) of \(retry.of))",
                          metadata: ["store": "\(store)"])
        }
    }
}
