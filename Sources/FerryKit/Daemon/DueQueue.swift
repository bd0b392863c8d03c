/// A priority queue of store names that tolerates changes of priority: an entry carries the
/// generation of its store's schedule when it was pushed, and entries whose generation is no
/// longer current are dropped when they reach the top (lazy deletion). Pushing again after a
/// change is therefore all an update costs: O(log n), where re-sorting every store after every
/// pass cost a daemon with 5,000 stores most of its CPU.
struct DueQueue<Key: Comparable> {
    struct Entry {
        var key: Key
        var store: String
        var generation: Int
    }

    private var heap: [Entry] = []

    var isEmpty: Bool { heap.isEmpty }
    var count: Int { heap.count }

    mutating func push(_ key: Key, store: String, generation: Int) {
        heap.append(Entry(key: key, store: store, generation: generation))
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].key < heap[parent].key else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    /// The smallest current entry, dropping stale ones on the way; `isCurrent` says whether
    /// an entry's generation is still its store's.
    mutating func peek(isCurrent: (Entry) -> Bool) -> Entry? {
        while let top = heap.first {
            if isCurrent(top) { return top }
            removeTop()
        }
        return nil
    }

    mutating func pop(isCurrent: (Entry) -> Bool) -> Entry? {
        guard let top = peek(isCurrent: isCurrent) else { return nil }
        removeTop()
        return top
    }

    /// Drops every stale entry when they outnumber the current ones, so a queue whose stores
    /// change often does not grow without bound.
    mutating func compact(currentCount: Int, isCurrent: (Entry) -> Bool) {
        guard heap.count > 64, heap.count > 2 * currentCount else { return }
        let kept = heap.filter(isCurrent)
        heap = []
        heap.reserveCapacity(kept.count)
        for entry in kept { push(entry.key, store: entry.store, generation: entry.generation) }
    }

    private mutating func removeTop() {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < heap.count, heap[left].key < heap[smallest].key { smallest = left }
            if right < heap.count, heap[right].key < heap[smallest].key { smallest = right }
            guard smallest != parent else { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
