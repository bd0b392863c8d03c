import Foundation

/// An `InputStream` that one thread feeds and another reads, blocking: how a parser that pulls
/// its input (swift-corelibs-foundation's `XMLParser(stream:)`, which has no push API) is given
/// a body arriving in pieces on a run loop that must never block.
///
/// Flow control: ``append(_:)`` says when more than `highWater` bytes wait, so the feeder can
/// suspend its source; once the reader has brought them down to `lowWater`, `onDrained` runs
/// (on the reader's thread) so the feeder can resume it. Each crossing is reported once.
final class FedInputStream: InputStream {
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var chunks: [Data] = []
    private var head = 0
    private var buffered = 0
    private var ended = false
    private var aborted = false
    private var aboveHighWater = false

    private let highWater: Int
    private let lowWater: Int
    private let onDrained: () -> Void
    /// Runs on the reader's thread each time a read is about to wait for bytes (a parser hands
    /// over what it has parsed so far, so nothing waits behind a slow network).
    private let beforeWaiting: () -> Void

    init(highWater: Int, lowWater: Int, beforeWaiting: @escaping () -> Void, onDrained: @escaping () -> Void) {
        precondition(lowWater < highWater)
        self.highWater = highWater
        self.lowWater = lowWater
        self.beforeWaiting = beforeWaiting
        self.onDrained = onDrained
        super.init(data: Data())
    }

    // MARK: - Feeding thread

    /// Queues `data` for the reader. Returns true when this pushed the waiting bytes past the
    /// high-water mark: the feeder should stop its source until `onDrained` runs.
    func append(_ data: Data) -> Bool {
        guard !data.isEmpty else { return false }
        condition.lock()
        defer { condition.unlock() }
        guard !ended, !aborted else { return false }
        chunks.append(data)
        buffered += data.count
        condition.signal()
        guard !aboveHighWater, buffered > highWater else { return false }
        aboveHighWater = true
        return true
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
        let drained = aboveHighWater && buffered <= lowWater
        if drained { aboveHighWater = false }
        condition.unlock()
        if drained { onDrained() }
        return count
    }
}
