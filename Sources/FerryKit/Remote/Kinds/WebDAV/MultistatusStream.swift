import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// Parses one `DAV:multistatus` body while it downloads, so memory does not grow with the
/// answer: an addressbook-query over a whole collection, a sync report listing every member.
///
///     let stream = MultistatusStream(parser: parser, name: "contacts", flow: task.flowControl, handlers: .init(
///         responses: { responses in ... },        // complete responses, in document order
///         end: { outcome in ... }))               // the summary, or why the body is invalid
///     // from the session's callbacks:
///     stream.feed(data) ... stream.finish()       // or stream.cancel()
///
/// Create it, feed it and cancel it on one run loop's thread (the pass's); every handler runs
/// there, never inside `feed`/`finish`/`cancel`. XMLParser runs on a thread of the stream's
/// own: corelibs' XMLParser has no push API, and its pull API (`XMLParser(stream:)`) blocks
/// while it waits for bytes, which a run loop must never do.
///
/// Memory stays bounded, and the three stages (download, parse, the owner's use of the
/// responses) overlap: once more than ``highWater`` bytes wait for the parser, the transfer is
/// suspended, and the parser resumes it itself when they are down to ``lowWater``
/// (``FedInputStream`` makes both decisions, each with its call, under one lock, so a resume
/// never overtakes the suspend it answers); the parser
/// hands responses over in groups of at most ``groupSize``, and waits while ``maxGroupsAhead``
/// groups are still queued on the owner's loop. (A resume posted to the owner's loop would
/// wait behind those groups: download and parse would take turns with the owner instead of
/// running beside it.) A group is also handed over whenever the parser catches up with the
/// download, so a slow server does not delay the responses parsed.
///
/// Bytes are screened (``MultistatusScreen``) before the parser sees them; an answer that
/// fails screening ends with that failure, after every response complete before the refused
/// bytes, however the body was split.
final class MultistatusStream: @unchecked Sendable {
    struct Handlers {
        /// Complete responses, in document order.
        var responses: ([Multistatus.Response]) -> Void
        /// The body is over: its summary (root, sync-token, top-level errors, what responses
        /// said about the whole answer; `responses` is empty), or why it is not a valid
        /// multistatus. Nothing follows.
        var end: (Result<Multistatus, MultistatusParser.Failure>) -> Void
    }

    static let highWater = 1 << 20
    static let lowWater = 256 << 10
    static let groupSize = 64
    static let maxGroupsAhead = 4

    /// Where the stream is, on the owner's thread.
    private enum State {
        case feeding
        /// The body is complete (or refused by the screen); waiting for the parser's end.
        case finishing
        /// Ended or cancelled: no handler runs any more.
        case done
    }

    private let parser: MultistatusParser
    private let owner: RunLoopHandle
    /// Groups posted and not yet taken by the owner; the parser waits at ``maxGroupsAhead``.
    private let ahead = NSCondition()
    private var groupsAhead = 0
    private var peakGroupsAhead = 0
    private var aborted = false
    // Owner's thread only.
    private let handlers: Handlers
    private var state = State.feeding
    private var screen = MultistatusScreen()
    private var screenFailure: MultistatusParser.Failure?
    private var input: FedInputStream!
    // Parser thread only.
    private var group: [Multistatus.Response] = []

    /// Starts the parser thread. Call on the owner's run loop thread. `flow` suspends and
    /// resumes the transfer the body comes from (nil: the body is already in memory).
    init(parser: MultistatusParser, name: String, flow: (any FlowControl)?, handlers: Handlers) {
        self.parser = parser
        self.handlers = handlers
        self.owner = RunLoopHandle.current()
        input = FedInputStream(
            highWater: Self.highWater,
            lowWater: Self.lowWater,
            flow: flow,
            beforeWaiting: { [unowned self] in self.handOverGroup() })
        // The thread keeps the stream alive until the parse ends, which feed's end, cancel()
        // or a failure always brings.
        Thread.start(named: "xml \(name)") { [self] in
            self.parse()
        }
    }

    // MARK: - Owner's thread

    /// The next piece of the body.
    func feed(_ data: Data) {
        assertOwner()
        guard case .feeding = state else { return }
        let chunkStart = screen.offset
        do {
            try screen.screen(data)
        } catch {
            // The parser gets the bytes before the refused ones, and then the end.
            let safe = screen.refusedOffset - chunkStart
            if safe > 0 { input.append(data.prefix(safe)) }
            refuse(error)
            return
        }
        input.append(data)
    }

    /// The body is complete; `end` follows once the parser has read it.
    func finish() {
        assertOwner()
        guard case .feeding = state else { return }
        do {
            try screen.finish()
        } catch {
            refuse(error)
            return
        }
        state = .finishing
        input.finish()
    }

    /// Stops the parser; no handler runs after this returns.
    func cancel() {
        assertOwner()
        state = .done
        input.abort()
        ahead.lock()
        aborted = true
        ahead.broadcast()
        ahead.unlock()
    }

    private func refuse(_ failure: MultistatusParser.Failure) {
        screenFailure = failure
        state = .finishing
        input.finish()
    }

    private func assertOwner() {
        precondition(owner.isCurrent, "MultistatusStream used off its owner's thread")
    }

    /// Runs `body` on the owner's loop unless the stream has ended by then.
    private func post(_ body: @escaping (MultistatusStream) -> Void) {
        let box = UncheckedSendableBox(body)
        owner.perform { [self] in
            if case .done = self.state { return }
            box.value(self)
        }
    }

    // MARK: - Parser thread

    private func parse() {
        let xml = XMLParser(stream: input)
        let handler = parser.prepare(xml) { [unowned self] response in
            self.group.append(response)
            if self.group.count >= Self.groupSize { self.handOverGroup() }
        }
        let parsed = xml.parse()
        // A parse that ended early (invalid XML) must not leave the transfer held.
        input.readerFinished()
        handOverGroup()
        let outcome = Result { () throws(MultistatusParser.Failure) in try handler.outcome(of: xml, parsed: parsed) }
        post { stream in
            stream.state = .done
            // Bytes the screen refused never reached the parser, so its own verdict on what
            // came before them does not count.
            if let refused = stream.screenFailure {
                stream.handlers.end(.failure(refused))
            } else {
                stream.handlers.end(outcome)
            }
        }
    }

    private func handOverGroup() {
        guard !group.isEmpty else { return }
        let responses = group
        group = []
        ahead.lock()
        while groupsAhead >= Self.maxGroupsAhead, !aborted {
            ahead.wait()
        }
        groupsAhead += 1
        peakGroupsAhead = max(peakGroupsAhead, groupsAhead)
        ahead.unlock()
        post { stream in
            stream.tookGroup()
            stream.handlers.responses(responses)
        }
    }

    /// The most groups that were ever queued on the owner's loop at once (for tests).
    var mostGroupsAhead: Int {
        ahead.lock()
        defer { ahead.unlock() }
        return peakGroupsAhead
    }

    /// The owner took a group (before using it, so the parser works on the next meanwhile).
    private func tookGroup() {
        ahead.lock()
        groupsAhead -= 1
        ahead.signal()
        ahead.unlock()
    }
}
