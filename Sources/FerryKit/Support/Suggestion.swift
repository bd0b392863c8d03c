/// "Did you mean" for a word a person typed: the closest of the words Ferry knows, when it is
/// close enough to be a typo rather than another word (as git and rclone suggest commands).
enum Suggestion {
    /// The candidate nearest to `typed` by edit distance (case-insensitive), when the distance
    /// is at most a third of the word's length (at least 1, at most 3); nil otherwise or on a tie
    /// between different candidates.
    static func closest(to typed: String, in candidates: some Sequence<String>) -> String? {
        let word = Array(typed.lowercased())
        guard !word.isEmpty else { return nil }
        let limit = min(3, max(1, word.count / 3))
        var best: (distance: Int, candidate: String)?
        var tied = false
        for candidate in Set(candidates) where candidate.lowercased() != typed.lowercased() {
            let distance = editDistance(word, Array(candidate.lowercased()), limit: limit)
            guard distance <= limit else { continue }
            if let current = best, distance == current.distance {
                tied = true
            } else if best.map({ distance < $0.distance }) ?? true {
                best = (distance, candidate)
                tied = false
            }
        }
        return tied ? nil : best?.candidate
    }

    /// `" (did you mean X?)"`, or "" without a close candidate.
    static func hint(for typed: String, in candidates: some Sequence<String>) -> String {
        closest(to: typed, in: candidates).map { " (did you mean \($0)?)" } ?? ""
    }

    /// Damerau-Levenshtein distance with adjacent transpositions (`feild` is one edit from
    /// `field`), stopping early once every path exceeds `limit`.
    static func editDistance(_ a: [Character], _ b: [Character], limit: Int) -> Int {
        if abs(a.count - b.count) > limit { return limit + 1 }
        var previous2 = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        for i in 1...max(a.count, 1) where !a.isEmpty {
            var current = [Int](repeating: 0, count: b.count + 1)
            current[0] = i
            var rowMinimum = current[0]
            for j in stride(from: 1, through: b.count, by: 1) {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    current[j] = min(current[j], previous2[j - 2] + 1)
                }
                rowMinimum = min(rowMinimum, current[j])
            }
            if rowMinimum > limit { return limit + 1 }
            previous2 = previous
            previous = current
        }
        return previous[b.count]
    }
}
