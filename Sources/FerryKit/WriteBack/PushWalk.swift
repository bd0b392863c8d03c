/// A writer's way through its changes, the same for every kind: the sink to tell, the change
/// that is next, the writer's requests to stop, and the only ways to hand a result over, to
/// give up and to end. A writer owns one and asks it; it never keeps the walk's state itself.
///
/// A sink call that throws (the replica failed to take a result) has ended the pass already:
/// the walk ends too, and stops the writer's requests.
final class PushWalk {
    private enum State {
        case idle
        case walking(sink: any RemoteWriterSink, changes: [LocalChange], index: Int)
        case ended
    }

    private var state = State.idle
    /// The writer the sink hears from; it owns the walk.
    private unowned let writer: any RemoteWriter
    /// The writer's requests, stopped when the walk ends early.
    private let loader: HTTPPageLoader
    /// The writer's step: takes ``upcoming(requests:)`` and pushes the first of them.
    private let next: () -> Void

    init(of writer: any RemoteWriter, loader: HTTPPageLoader, next: @escaping () -> Void) {
        self.writer = writer
        self.loader = loader
        self.next = next
    }

    /// Starts the walk; the writer's first step runs on the current run loop, never inside
    /// this call.
    func start(_ changes: [LocalChange], sink: any RemoteWriterSink) {
        guard case .idle = state else { preconditionFailure("a writer was started twice") }
        state = .walking(sink: sink, changes: changes, index: 0)
        RunLoopHandle.later { [weak self] in self?.next() }
    }

    var isWalking: Bool {
        if case .walking = state { true } else { false }
    }

    /// The changes from the next one on; empty once ended. When none is left the walk ends and
    /// tells the sink, with the requests the writer made.
    var upcoming: ArraySlice<LocalChange> {
        guard case .walking(let sink, let changes, let index) = state else { return [] }
        guard index < changes.count else {
            state = .ended
            sink.writer(writer, didFinishWithRequests: loader.requestCount)
            return []
        }
        return changes[index...]
    }

    /// What a writer does with a create it is about to send.
    enum CreateSend {
        /// Recorded: send it.
        case send
        /// No longer queued (its row was deleted before it was sent): the walk has moved past
        /// it; send nothing.
        case skipped
        /// The walk ended: stop.
        case stopped
    }

    /// Records that a create is about to be sent (`remoteID`: the id it names the record with,
    /// when the client chooses it).
    func willSendCreate(_ change: LocalChange, body: String, remoteID: String? = nil) -> CreateSend {
        guard case .walking(let sink, _, _) = state else { return .stopped }
        do {
            return try sink.writer(writer, willSendCreate: change, body: body, remoteID: remoteID) ? .send : .skipped
        } catch {
            cancel()
            return .stopped
        }
    }

    /// Records updates about to be sent; false when the walk ended (then stop).
    func willSendUpdates(_ sends: [UpdateSend]) -> Bool {
        guard !sends.isEmpty else { return isWalking }
        guard case .walking(let sink, _, _) = state else { return false }
        do {
            try sink.writer(writer, willSendUpdates: sends)
            return true
        } catch {
            cancel()
            return false
        }
    }

    /// The result for a change the remote answered "changed since your base" for, when the
    /// remote's record holds the change's last send (`holds` compares as the kind does): that
    /// send landed and its answer was lost, so nobody else wrote. The change is done when the
    /// row still holds what was sent; otherwise it is pushed again on top of what the send made
    /// (a later edit, or a delete). Nil when nothing was sent or the remote holds something
    /// else: then it is what it looks like.
    static func resumption(of change: LocalChange, remote: RemoteRecord, holds: (RemoteRecord, String) -> Bool) -> PushResult? {
        guard change.sent != nil, let sent = change.sentBody, holds(remote, sent) else { return nil }
        if change.operation == .update, let body = change.body, holds(remote, body) { return .accepted(remote) }
        return .acceptedEarlierSend(remote, sent: nil)
    }

    /// Hands one change's result over and takes the next step.
    func finish(_ change: LocalChange, _ result: PushResult) {
        deliver([(change, result)], advancing: 1)
    }

    /// Leaves a change queued for a later pass (nothing is recorded) and takes the next step.
    func postpone(_ change: LocalChange) {
        deliver([(change, nil)], advancing: 1)
    }

    /// Hands results over (recorded together), moves past `count` changes and takes the next
    /// step.
    func deliver(_ results: [(LocalChange, PushResult?)], advancing count: Int) {
        guard case .walking(let sink, let changes, let index) = state else { return }
        // A change without a result (an answer that said nothing of it) stays queued.
        let answered = results.compactMap { change, result in result.map { (change: change, result: $0) } }
        if !answered.isEmpty {
            do {
                try sink.writer(writer, didPush: answered)
            } catch {
                return cancel()
            }
        }
        guard case .walking = state else { return }
        state = .walking(sink: sink, changes: changes, index: index + count)
        next()
    }

    /// Ends the walk with a failure the whole push shares (the network, the server, the
    /// credentials).
    func fail(_ error: SyncError) {
        guard case .walking(let sink, _, _) = state else { return }
        loader.cancel()
        state = .ended
        sink.writer(writer, didFailWith: error)
    }

    /// Ends the walk without a word, its requests stopped (``RemoteWriter/cancel()``).
    func cancel() {
        loader.cancel()
        state = .ended
    }
}
