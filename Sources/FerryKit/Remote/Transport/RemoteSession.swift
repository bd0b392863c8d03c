import Foundation

/// Receives a ``RemoteSession``'s events, always on the run loop of the thread that created the
/// session, in order: head, data chunks, then exactly one of completion or failure. Nothing
/// arrives for a task after its ``TransferTask/cancel()`` returned.
public protocol RemoteSessionDelegate: AnyObject {
    /// The final response's status line and headers (after redirects, which the session
    /// follows as ``RedirectPolicy`` says), before any body.
    func session(_ session: RemoteSession, task: TransferTask, didReceive head: ResponseHead)
    /// The next piece of the body. While this runs the transfer keeps buffering up to the
    /// configured limit, then pauses until the owner catches up.
    func session(_ session: RemoteSession, task: TransferTask, didReceive data: Data)
    func session(_ session: RemoteSession, task: TransferTask, didCompleteWith metrics: TransferMetrics)
    func session(_ session: RemoteSession, task: TransferTask, didFailWith error: TransferError)
}

/// A callback-based HTTP session in the spirit of DBRestClient: create it on a thread that runs
/// a run loop (a ``RunLoopOperation``'s thread, or the main thread), start requests, and receive
/// every callback on that loop.
///
/// The session and its tasks belong to that thread: calling them from another thread traps.
/// libcurl's I/O happens on one shared thread (``CurlIOThread``), never on the owner's.
///
/// A redirect is followed with a transfer per hop under the same ``TransferTask``: the owner
/// sees one head, the last one's.
public final class RemoteSession {
    public let configuration: SessionConfiguration
    public weak var delegate: (any RemoteSessionDelegate)?
    private let owner: RunLoopHandle
    private let redirectPolicy: RedirectPolicy
    private var tasks: [ObjectIdentifier: TransferTask] = [:]
    private var nextIdentifier = 1

    /// Creates a session whose callbacks run on the calling thread's run loop.
    public init(configuration: SessionConfiguration = SessionConfiguration(), delegate: (any RemoteSessionDelegate)?) {
        self.configuration = configuration
        self.delegate = delegate
        self.owner = RunLoopHandle.current()
        self.redirectPolicy = RedirectPolicy(configuration)
    }

    /// Tasks started and not yet completed, failed or cancelled.
    public var activeTaskCount: Int {
        assertOwner()
        return tasks.count
    }

    /// Starts a request. A request libcurl cannot take (a malformed URL, say) throws at once.
    ///
    /// With an ``SessionConfiguration/authorizer`` the request goes out with its current
    /// `Authorization`, or, when none is held, once the authorizer fetched one.
    @discardableResult
    public func start(_ request: HTTPRequest) throws(TransferError) -> TransferTask {
        assertOwner()
        var sent = request
        let authorization = configuration.authorizer.map { $0.base.currentAuthorization() }
        if let value = authorization ?? nil { sent.headers.set("Authorization", value) }
        let transfer = try CurlTransfer(request: sent, configuration: configuration, owner: owner)
        let task = TransferTask(identifier: nextIdentifier, request: request, transfer: transfer, session: self)
        nextIdentifier += 1
        tasks[ObjectIdentifier(task)] = task
        if case .some(nil) = authorization {
            authorize(task, rejecting: nil)
        } else {
            submit(transfer, for: task)
        }
        return task
    }

    private func submit(_ transfer: CurlTransfer, for task: TransferTask) {
        transfer.deliver = { [weak self, weak task, weak transfer] delivery in
            // A hop left behind by a redirect, or answered 401 and sent again, has nothing more
            // to say.
            guard let self, let task, let transfer, transfer === task.transfer, !task.isAwaitingAuthorization else { return }
            self.dispatch(delivery, for: task)
        }
        CurlIOThread.shared.submit(.add(transfer))
    }

    /// Has the authorizer fetch a value, then sends the task's current request with it. The
    /// task's transfer, until then, is one libcurl never saw.
    private func authorize(_ task: TransferTask, rejecting rejected: String?) {
        guard let authorizer = configuration.authorizer?.base else { preconditionFailure("RemoteSession: no authorizer") }
        task.isAwaitingAuthorization = true
        authorizer.authorize(rejecting: rejected, on: owner) { [weak self, weak task] result in
            guard let self, let task, !task.isCancelled, !task.isDone else { return }
            self.assertOwner()
            task.isAwaitingAuthorization = false
            switch result {
            case .success(let value):
                var request = task.transfer.request
                request.headers.set("Authorization", value)
                do throws(TransferError) {
                    let transfer = try CurlTransfer(request: request, configuration: self.configuration, owner: self.owner)
                    task.transfer = transfer
                    self.submit(transfer, for: task)
                } catch {
                    self.end(task, with: error)
                }
            case .failure(let error):
                self.end(task, with: error)
            }
        }
    }

    /// Whether `head` is a 401 to an authorizer's value that the session takes over: it then
    /// asks for another value and sends the request again, once per task. A 401 to a request
    /// a redirect stripped of its credentials, or to the second try, is the owner's answer.
    private func retriesAuthorization(_ head: ResponseHead, delivery: CurlTransfer.Delivery, for task: TransferTask) -> Bool {
        guard head.status == 401, configuration.authorizer != nil, !task.authorizationRetried,
              let sent = task.transfer.request.headers["Authorization"] else { return false }
        task.authorizationRetried = true
        if delivery.completion == nil, task.transfer.markCancelled() {
            CurlIOThread.shared.submit(.cancel(task.transfer))
        }
        authorize(task, rejecting: sent)
        return true
    }

    /// Cancels every task. The session stays usable.
    public func cancelAll() {
        assertOwner()
        for task in Array(tasks.values) {
            task.cancel()
        }
    }

    private func dispatch(_ delivery: CurlTransfer.Delivery, for task: TransferTask) {
        if var head = delivery.head {
            guard !followsRedirect(head, delivery: delivery, for: task),
                  !retriesAuthorization(head, delivery: delivery, for: task) else { return }
            head.redirects = task.chain.redirects
            head.isPermanentlyRedirected = task.chain.redirects > 0 && task.chain.allPermanent
            head.credentialsWithheld = task.chain.credentialsWithheld
            task.head = head
            delegate?.session(self, task: task, didReceive: head)
        }
        if !delivery.body.isEmpty, !task.isCancelled {
            delegate?.session(self, task: task, didReceive: delivery.body)
        }
        if let completion = delivery.completion {
            guard !task.isCancelled else { return }
            tasks[ObjectIdentifier(task)] = nil
            task.isDone = true
            switch completion {
            case .success(let metrics):
                delegate?.session(self, task: task, didCompleteWith: metrics)
            case .failure(let error):
                delegate?.session(self, task: task, didFailWith: error)
            }
        } else if delivery.resumeNeeded, !task.isCancelled {
            CurlIOThread.shared.submit(.resume(task.transfer))
        }
    }

    /// Whether `head` was a redirect the session took over: it then started the next hop, or
    /// failed the task.
    private func followsRedirect(_ head: ResponseHead, delivery: CurlTransfer.Delivery, for task: TransferTask) -> Bool {
        let decision = redirectPolicy.decide(status: head.status, location: head.headers["Location"], after: task.transfer.request, chain: task.chain)
        if case .deliver = decision { return false }
        if delivery.completion == nil, task.transfer.markCancelled() {
            // The redirect's own body is not worth reading to the end.
            CurlIOThread.shared.submit(.cancel(task.transfer))
        }
        switch decision {
        case .deliver:
            return false
        case .follow(let next, let chain):
            do {
                let transfer = try CurlTransfer(request: next, configuration: configuration, owner: owner)
                task.chain = chain
                task.transfer = transfer
                submit(transfer, for: task)
            } catch {
                end(task, with: error)
            }
        case .refuse(let kind, let detail):
            end(task, with: TransferError(kind: kind, url: head.url, detail: detail))
        }
        return true
    }

    private func end(_ task: TransferTask, with error: TransferError) {
        tasks[ObjectIdentifier(task)] = nil
        task.isDone = true
        delegate?.session(self, task: task, didFailWith: error)
    }

    fileprivate func remove(_ task: TransferTask) {
        tasks[ObjectIdentifier(task)] = nil
    }

    fileprivate func assertOwner(_ function: StaticString = #function) {
        precondition(owner.isCurrent, "RemoteSession.\(function) called off the thread that created the session")
    }
}

/// One request started by a ``RemoteSession``.
public final class TransferTask: CustomStringConvertible {
    /// Increasing per session and never reused: for logs, and to key what an owner keeps
    /// about a task that may outlive the session's hold on it.
    public let identifier: Int
    /// The request as started; a redirect sends it again elsewhere (``ResponseHead/url``).
    public let request: HTTPRequest
    /// The response head once received.
    public fileprivate(set) var head: ResponseHead?
    public fileprivate(set) var isCancelled = false
    fileprivate var isDone = false
    /// Waiting for the session's authorizer: its transfer has not been handed to libcurl.
    fileprivate var isAwaitingAuthorization = false
    /// Whether a 401 already had the request sent again with a new value.
    fileprivate var authorizationRetried = false
    /// The transfer of the chain's latest hop.
    fileprivate var transfer: CurlTransfer
    fileprivate var chain: RedirectPolicy.Chain
    private weak var session: RemoteSession?

    fileprivate init(identifier: Int, request: HTTPRequest, transfer: CurlTransfer, session: RemoteSession) {
        self.identifier = identifier
        self.request = request
        self.transfer = transfer
        self.chain = RedirectPolicy.Chain(firstURL: request.url)
        self.session = session
    }

    /// Stops the transfer. Call on the session's thread; when this returns no callback for the
    /// task will arrive. Cancelling a finished task does nothing.
    public func cancel() {
        session?.assertOwner()
        guard !isCancelled, !isDone else { return }
        isCancelled = true
        if !isAwaitingAuthorization, transfer.markCancelled() {
            CurlIOThread.shared.submit(.cancel(transfer))
        }
        session?.remove(self)
    }

    /// Stops reading the body until ``resume()``, for an owner that hands the body to another
    /// thread and must not let it pile up there: the transfer pauses at its next write, and
    /// bytes received before that still arrive. Call on the session's thread. A suspended
    /// transfer is exempt from the low-speed limit (libcurl does not time paused transfers)
    /// but not from the total timeout.
    public func suspend() {
        session?.assertOwner()
        guard !isCancelled, !isDone else { return }
        flowControl.suspend()
    }

    /// Lets a ``suspend()``ed transfer read its body again. Call on the session's thread.
    public func resume() {
        session?.assertOwner()
        guard !isCancelled, !isDone else { return }
        flowControl.resume()
    }

    /// ``suspend()`` and ``resume()`` for the thread the body is handed to, which should not
    /// have to wait for the owner's loop to let the transfer go on. Harmless once the task has
    /// ended or was cancelled. Take it once the head arrived: it controls the transfer then
    /// answering, and the head comes after the last redirect.
    public var flowControl: TransferFlowControl {
        TransferFlowControl(transfer: transfer)
    }

    public var description: String {
        "task \(identifier) \(request)"
    }
}

/// Suspends and resumes one transfer's body from any thread (``TransferTask/flowControl``).
///
/// Level-triggered: each call sets whether the transfer may read, and the last call to reach
/// the transfer wins. A resume that arrives before the transfer actually paused keeps it from
/// pausing; one that arrives while it is paused restarts it. The transfer cannot tell a late
/// suspend from a new one, so callers on different threads must order their calls themselves:
/// make each decision and its call one step under a lock they share (``FedInputStream`` does).
public struct TransferFlowControl: Sendable {
    fileprivate let transfer: CurlTransfer

    /// The transfer pauses at its next write.
    public func suspend() {
        transfer.hold()
    }

    /// The transfer reads again, if it paused; nothing once it has ended.
    public func resume() {
        if transfer.release() {
            CurlIOThread.shared.submit(.resume(transfer))
        }
    }
}
