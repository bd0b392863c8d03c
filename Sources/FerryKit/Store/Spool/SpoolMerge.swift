import Foundation

/// A k-way merge of a ``SortedSpool``'s runs and arena: its changes in id order, equal ids in
/// arrival order, a chunk at a time.
///
/// What it gives back merges as the batches it was given would have, one after another: the
/// merge engine applies only the last change of an id within a batch (the others count as
/// unchanged), while changes of one id in separate batches are each applied in turn (a stale
/// version after a newer one changes nothing). So changes that a later one of their own batch
/// supersedes are left out here, and a chunk ends before an id it already holds.
final class SpoolMerge {
    /// One sorted sequence of records: a run read from the file, or the sorted arena.
    final class Source {
        private var bytes: [UInt8]
        /// The arena's sorted offsets, or nil for a run (whose records follow one another).
        private let offsets: [Int]?
        private var index = 0
        /// The current record's offset in `bytes`.
        private(set) var current = 0
        // A run's reading window.
        private var filled = 0
        private var next: Int64 = 0
        private var end: Int64 = 0
        private let file: SpoolFile?

        init(arena: [UInt8], offsets: [Int]) {
            bytes = arena
            self.offsets = offsets
            file = nil
            current = offsets.first ?? 0
        }

        init(run: (offset: Int64, length: Int64), file: SpoolFile) {
            // The 512 runs of a 2 GiB drain of 4 MiB runs read through 16 MB (a 10M-record first
            // sync's peak memory is in its drains).
            bytes = [UInt8](repeating: 0, count: 32 << 10)
            offsets = nil
            self.file = file
            next = run.offset
            end = run.offset + run.length
        }

        var isExhausted: Bool {
            if let offsets { return index >= offsets.count }
            return current >= filled && next >= end
        }

        /// Reads a run's first record; nothing for the arena.
        func load() throws(StoreError) {
            if offsets == nil { try ensureRecord() }
        }

        func advance() throws(StoreError) {
            if let offsets {
                index += 1
                if index < offsets.count { current = offsets[index] }
                return
            }
            current += bytes.withUnsafeBytes { SpoolRecord.size($0, at: current) }
            try ensureRecord()
        }

        func withCurrent<T>(_ body: (UnsafeRawBufferPointer, Int) -> T) -> T {
            bytes.withUnsafeBytes { body($0, current) }
        }

        /// Makes the window hold the whole record at `current`, reading more of the run (and
        /// growing the window for a record larger than it) as needed.
        private func ensureRecord() throws(StoreError) {
            if filled - current < SortedSpool.headerBytes { try refill() }
            guard filled > current else { return }
            precondition(filled - current >= SortedSpool.headerBytes, "spool run ends inside a record")
            let size = bytes.withUnsafeBytes { SpoolRecord.size($0, at: current) }
            if filled - current < size {
                if size > bytes.count { bytes += [UInt8](repeating: 0, count: size - bytes.count) }
                try refill()
            }
            precondition(filled - current >= size, "spool run ends inside a record")
        }

        private func refill() throws(StoreError) {
            guard let file else { return }
            let kept = filled - current
            if kept > 0, current > 0 {
                bytes.withUnsafeMutableBytes { window in
                    window.baseAddress!.copyMemory(from: window.baseAddress! + current, byteCount: kept)
                }
            }
            filled = kept
            current = 0
            while filled < bytes.count, next < end {
                let wanted = min(bytes.count - filled, Int(end - next))
                let got = try file.read(into: &bytes, from: filled, count: wanted, at: next)
                precondition(got > 0, "spool file shorter than its runs")
                filled += got
                next += Int64(got)
            }
        }
    }

    private let sources: [Source]
    /// A binary min-heap of source indices, by (current id, source index).
    private var heap: [Int] = []
    private var lastID: String?
    /// A change taken from the heap that begins the next chunk.
    private var carried: RecordChange?

    init(sources: [Source]) throws(StoreError) {
        self.sources = sources
        for (position, source) in sources.enumerated() {
            try source.load()
            if !source.isExhausted { push(position) }
        }
    }

    /// Up to `limit` changes in id order, ending early before a repeated id; none when the
    /// merge is over. `superseded`: changes left out because a later change of the same id in
    /// the same batch replaces them, as the merge engine leaves them out within a batch (they
    /// count as unchanged).
    func next(limit: Int) throws(StoreError) -> (changes: [RecordChange], superseded: Int) {
        var chunk: [RecordChange] = []
        chunk.reserveCapacity(min(limit, 16_384))
        var superseded = 0
        if let carried {
            chunk.append(carried)
            lastID = carried.id
            self.carried = nil
        }
        while chunk.count < limit, let change = try pop(superseded: &superseded) {
            if change.id == lastID, !chunk.isEmpty {
                // It begins the next chunk: a batch applies only the last change of an id.
                carried = change
                break
            }
            lastID = change.id
            chunk.append(change)
        }
        return (chunk, superseded)
    }

    /// The next change that no later change of the same id and batch supersedes.
    private func pop(superseded: inout Int) throws(StoreError) -> RecordChange? {
        while let top = heap.first {
            let (change, batch) = sources[top].withCurrent { (SpoolRecord.change($0, at: $1), SpoolRecord.batch($0, at: $1)) }
            try advanceTop()
            // Equal ids come out in arrival order, so a change of the same batch after it is
            // the next one out.
            if let following = heap.first,
               sources[following].withCurrent({ SpoolRecord.hasID(change.id, $0, at: $1) && SpoolRecord.batch($0, at: $1) == batch }) {
                superseded += 1
                continue
            }
            return change
        }
        return nil
    }

    /// The next id in order, as ``next(limit:)`` would give its change, copied into `id`;
    /// false when the merge is over. Builds no change: a sweep's walk needs the marks' ids
    /// alone, and a String and a change per mark cost more than the walk's comparisons.
    func nextID(into id: inout [UInt8]) throws(StoreError) -> Bool {
        while let top = heap.first {
            let batch = sources[top].withCurrent { bytes, offset in
                id.removeAll(keepingCapacity: true)
                id.append(contentsOf: SpoolRecord.id(bytes, at: offset))
                return SpoolRecord.batch(bytes, at: offset)
            }
            try advanceTop()
            if let following = heap.first,
               sources[following].withCurrent({ SpoolRecord.id($0, at: $1).elementsEqual(id) && SpoolRecord.batch($0, at: $1) == batch }) {
                continue
            }
            return true
        }
        return false
    }

    /// Moves the source on top of the heap to its next record and restores the heap.
    private func advanceTop() throws(StoreError) {
        let source = sources[heap[0]]
        try source.advance()
        if source.isExhausted {
            let last = heap.removeLast()
            if !heap.isEmpty {
                heap[0] = last
                siftDown(0)
            }
        } else {
            siftDown(0)
        }
    }

    // MARK: - Heap

    private func precedes(_ left: Int, _ right: Int) -> Bool {
        let order = sources[left].withCurrent { leftBytes, leftOffset in
            sources[right].withCurrent { rightBytes, rightOffset in
                SpoolRecord.compareIDs(leftBytes, leftOffset, rightBytes, rightOffset)
            }
        }
        return order != 0 ? order < 0 : left < right
    }

    private func push(_ source: Int) {
        heap.append(source)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard precedes(heap[child], heap[parent]) else { return }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < heap.count else { return }
            var least = left
            if left + 1 < heap.count, precedes(heap[left + 1], heap[left]) { least = left + 1 }
            guard precedes(heap[least], heap[parent]) else { return }
            heap.swapAt(least, parent)
            parent = least
        }
    }
}
