import Foundation

/// What a streamed body comes from, held and released from any thread. Calls take effect in
/// the order they arrive, the last one winning (``TransferFlowControl``'s semantics), so a
/// caller deciding on shared state must make each decision and its call one step.
protocol FlowControl: Sendable {
    func suspend()
    func resume()
}

extension TransferFlowControl: FlowControl {}

/// An `InputStream` that one thread feeds and another reads, blocking: how a parser that pulls
/// its input (swift-corelibs-foundation's `XMLParser(stream:)`, which has no push API) is given
/// a body arriving in pieces on a run loop that must never block.
///
/// Flow control: the stream holds its source (`flow`) while more than `highWater` bytes wait
/// for the reader, and releases it once the reader has brought them down to `lowWater`, or
/// has stopped reading. Each decision and the call that carries it out happen under the
/// stream's lock, whichever thread makes them (the feeder's append, the reader's read), so they
/// reach the source in the order they were made. Were the call made after the lock is
/// released, a reader draining the backlog between a feeder's decision to suspend and its
/// suspend() would resume first (finding nothing held), and the late suspend would then hold
/// the source with nothing left to release it: a transfer paused until its total timeout.
final class FedInputStream: InputStream {
    /// Whether the source may send.
    enum SourceState: Equatable {
        case flowing
        case held
    }

    /// The hysteresis between the two marks: what the source should be once `buffered` bytes
    /// wait, given what it is now.
    static func sourceState(after state: SourceState, buffered: Int, highWater: Int, lowWater: Int) -> SourceState {
        switch state {
        case .flowing: buffered > highWater ? .held : .flowing
        case .held: buffered <= lowWater ? .flowing : .held
        }
    }

    private let condition = NSCondition()
    // Guarded by `condition`.
    private var chunks: [Data] = []
    private var head = 0
    private var buffered = 0
    private var ended = false
    private var aborted = false
    /// The reader will read no more (its parse ended): nothing is kept for it any more.
    private var readerDone = false
    private var source = SourceState.flowing

    private let highWater: Int
    private let lowWater: Int
    private let flow: (any FlowControl)?
    /// Runs on the reader's thread each time a read is about to wait for bytes (a parser hands
    /// over what it has parsed so far, so nothing waits behind a slow network).
    private let beforeWaiting: () -> Void

    /// `flow` is held and released from the feeder's and the reader's threads, with the
    /// stream's lock held (nil: nothing to hold, the body is in memory).
    init(highWater: Int, lowWater: Int, flow: (any FlowControl)?, beforeWaiting: @escaping () -> Void) {
        precondition(lowWater < highWater)
        self.highWater = highWater
        self.lowWater = lowWater
        self.flow = flow
        self.beforeWaiting = beforeWaiting
        super.init(data: Data())
    }

    /// Holds or releases the source for the bytes now waiting. Call with the lock held.
    private func steerSource() {
        let next = Self.sourceState(after: source, buffered: buffered, highWater: highWater, lowWater: lowWater)
        guard next != source else { return }
        source = next
        switch next {
        case .held: flow?.suspend()
        case .flowing: flow?.resume()
        }
    }

    // MARK: - Feeding thread

    /// Queues `data` for the reader, holding the source if this brings the bytes waiting past
    /// the high-water mark. Dropped after ``finish()``, ``abort()`` or the reader's end.
    func append(_ data: Data) {
        guard !data.isEmpty else { return }
        condition.lock()
        defer { condition.unlock() }
        guard !ended, !aborted, !readerDone else { return }
        chunks.append(data)
        buffered += data.count
        condition.signal()
        steerSource()
    }

    /// No more bytes: the reader sees the end once it has read what is queued.
    func finish() {
        condition.lock()
        ended = true
        condition.signal()
        condition.unlock()
    }

    /// Drops what is queued; the reader's next read fails at once, even one already waiting.
    func abort() {
        condition.lock()
        aborted = true
        chunks = []
        head = 0
        buffered = 0
        condition.signal()
        condition.unlock()
    }

    // MARK: - InputStream, reading thread

    // The base class wraps a CFReadStream this subclass never opens: everything XMLParser asks
    // of a stream is answered here (corelibs 6.3 reads streamError after a failed read, and the
    // base getter traps on the unopened stream).
    override func open() {}
    override func close() {}
    override var hasBytesAvailable: Bool { true }

    override var streamStatus: Stream.Status {
        condition.lock()
        defer { condition.unlock() }
        if aborted { return .error }
        return ended && head == chunks.count ? .atEnd : .open
    }

    override var streamError: (any Error)? {
        condition.lock()
        defer { condition.unlock() }
        return aborted ? NSError(domain: NSPOSIXErrorDomain, code: Int(ECANCELED)) : nil
    }

    /// Blocks until bytes, the end (0) or an abort (-1).
    override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength length: Int) -> Int {
        condition.lock()
        if head == chunks.count, !ended, !aborted {
            condition.unlock()
            beforeWaiting()
            condition.lock()
            while head == chunks.count, !ended, !aborted {
                condition.wait()
            }
        }
        if aborted {
            condition.unlock()
            return -1
        }
        guard head < chunks.count else {
            condition.unlock()
            return 0
        }
        let chunk = chunks[head]
        let count = min(length, chunk.count)
        chunk.copyBytes(to: buffer, count: count)
        if count == chunk.count {
            chunks[head] = Data()
            head += 1
            if head == chunks.count {
                chunks.removeAll(keepingCapacity: true)
                head = 0
            }
        } else {
            chunks[head] = chunk.dropFirst(count)
        }
        buffered -= count
        steerSource()
        condition.unlock()
        return count
    }

    /// The reader will read no more (its parse ended, whether or not at the end of the body):
    /// what is queued is dropped, later appends too, and a held source is released, so a
    /// reader that gave up early never leaves its transfer paused.
    func readerFinished() {
        condition.lock()
        defer { condition.unlock() }
        readerDone = true
        chunks = []
        head = 0
        buffered = 0
        steerSource()
    }
}
