import Foundation

/// A ``SpoolMerge`` run on a thread of its own, ``depth`` chunks ahead of the drain that takes
/// them. Reading runs back from the spool file, the k-way merge and building each
/// change then overlap the merge engine's transactions instead of preceding each: on two
/// cores that took a sixth of a 1M-record drain off the pass thread.
///
/// The thread reads the spool's file and arena until it stops, so whoever starts one calls
/// ``finish()`` before the spool is reset or closed. Chunks come out exactly as
/// ``SpoolMerge/next(limit:)`` gives them, in the same order; the first error ends the
/// reading and is thrown by the ``next()`` that would have returned the chunk after it.
final class MergeReadAhead: @unchecked Sendable {
    typealias Chunk = (changes: [RecordChange], superseded: Int)

    /// Chunks held ready at most. With the one being built, the one being applied and the one
    /// the drain holds to know the last, four chunks of 10,000 records (about 6 MB each with
    /// their objects) are alive at once. A second one waiting took a 10M-record first sync to
    /// 151.5 MB of peak memory; with one, 1M first pulls ran as fast (1.37× and 1.39× the raw
    /// loop, against 1.26–1.53×).
    static let depth = 1

    /// The reading thread's side. Everything below is guarded by `condition`.
    private enum State {
        /// Building chunks.
        case reading
        /// The merge gave its last chunk.
        case exhausted
        /// The merge failed; chunks before the failure are still handed out.
        case failed(StoreError)
        /// ``finish()`` asked the thread to stop before the merge was over.
        case stopping
    }

    private let condition = NSCondition()
    private var state = State.reading
    private var ready: [Chunk] = []
    /// Whether the thread has returned: no read of the spool happens after this is true.
    private var threadEnded = false
    private let limit: Int

    /// Starts reading `merge` in chunks of at most `limit` changes.
    init(_ merge: SpoolMerge, limit: Int) {
        self.limit = limit
        let handed = Handover(merge: merge)
        Thread.start(named: "ferry-spool-merge") { [self] in read(handed.merge) }
    }

    /// The merge goes to the reading thread, and no other thread touches it afterwards.
    private struct Handover: @unchecked Sendable {
        let merge: SpoolMerge
    }

    /// The next chunk, waiting for it when it is not built yet; an empty chunk when the merge
    /// is over.
    func next() throws(StoreError) -> Chunk {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if !ready.isEmpty {
                let chunk = ready.removeFirst()
                condition.broadcast()
                return chunk
            }
            switch state {
            case .reading: condition.wait()
            case .exhausted: return ([], 0)
            case .failed(let error): throw error
            case .stopping: preconditionFailure("MergeReadAhead.next() after finish()")
            }
        }
    }

    /// Stops the thread (at once if it waits for room, after the chunk it is building
    /// otherwise) and returns once it no longer reads the spool. Safe to call again.
    func finish() {
        condition.lock()
        defer { condition.unlock() }
        if case .reading = state { state = .stopping }
        condition.broadcast()
        while !threadEnded { condition.wait() }
        ready.removeAll()
    }

    private func read(_ merge: SpoolMerge) {
        defer {
            condition.lock()
            threadEnded = true
            condition.broadcast()
            condition.unlock()
        }
        while true {
            condition.lock()
            while ready.count >= Self.depth, case .reading = state { condition.wait() }
            guard case .reading = state else {
                condition.unlock()
                return
            }
            condition.unlock()

            let result: Result<Chunk, StoreError>
            do throws(StoreError) { result = .success(try merge.next(limit: limit)) } catch { result = .failure(error) }

            condition.lock()
            defer { condition.broadcast(); condition.unlock() }
            guard case .reading = state else { return }
            switch result {
            case .success(let chunk) where chunk.changes.isEmpty:
                // Left out of the merge as superseded, still counted: they ride on the end.
                if chunk.superseded > 0 { ready.append(chunk) }
                state = .exhausted
                return
            case .success(let chunk):
                ready.append(chunk)
            case .failure(let error):
                state = .failed(error)
                return
            }
        }
    }
}
