/// A writer's way through its changes, the same for every kind: the sink to tell, the change
/// that is next, and the only ways to hand a result over, to give up and to end. A writer owns
/// one and asks it; it never keeps the walk's state itself.
///
/// A sink call that throws (the replica failed to take a result) has ended the pass already:
/// the walk ends too, and the writer stops its requests.
final class PushWalk {
    private enum State {
        case idle
        case walking(sink: any RemoteWriterSink, changes: [LocalChange], index: Int)
        case ended
    }

    private var state = State.idle
    /// The writer the sink hears from; it owns the walk.
    private unowned let writer: any RemoteWriter

    init(of writer: any RemoteWriter) {
        self.writer = writer
    }

    /// Starts the walk; `next` runs on the current run loop, never inside this call.
    func start(_ changes: [LocalChange], sink: any RemoteWriterSink, next: @escaping () -> Void) {
        guard case .idle = state else { preconditionFailure("a writer was started twice") }
        state = .walking(sink: sink, changes: changes, index: 0)
        RunLoopHandle.later(next)
    }

    var isWalking: Bool {
        if case .walking = state { true } else { false }
    }

    /// The changes from the next one on; empty once ended. When none is left the walk ends and
    /// tells the sink, with the requests the writer made.
    func upcoming(requests: Int) -> ArraySlice<LocalChange> {
        guard case .walking(let sink, let changes, let index) = state else { return [] }
        guard index < changes.count else {
            state = .ended
            sink.writer(writer, didFinishWithRequests: requests)
            return []
        }
        return changes[index...]
    }

    /// Records that a create is about to be sent; false when the walk ended (stop).
    func willSendCreate(_ change: LocalChange, body: String) -> Bool {
        guard case .walking(let sink, _, _) = state else { return false }
        do {
            try sink.writer(writer, willSendCreate: change, body: body)
            return true
        } catch {
            state = .ended
            return false
        }
    }

    /// Hands results over in order and moves past them; false when the walk ended (stop).
    func deliver(_ results: [(LocalChange, PushResult?)], advancing count: Int) -> Bool {
        for (change, result) in results {
            guard case .walking(let sink, _, _) = state else { return false }
            // A change without a result (an answer that said nothing of it) stays queued.
            guard let result else { continue }
            do {
                try sink.writer(writer, didPush: change, result: result)
            } catch {
                state = .ended
                return false
            }
        }
        guard case .walking(let sink, let changes, let index) = state else { return false }
        state = .walking(sink: sink, changes: changes, index: index + count)
        return true
    }

    /// Ends the walk with a failure the whole push shares.
    func fail(_ error: SyncError) {
        guard case .walking(let sink, _, _) = state else { return }
        state = .ended
        sink.writer(writer, didFailWith: error)
    }

    /// Ends the walk without a word (cancelled).
    func end() {
        state = .ended
    }
}
