/// Feeds bytes to a hash eight at a time: the shared loop of Ferry's two non-cryptographic
/// hashes (``BatchDeduplicator``'s id hash and ``PageDigest``), each with its own step.
enum WordFold {
    /// Folds `raw`'s whole little-endian words into `initial` with `step`, and returns the
    /// result with the last 0 to 7 bytes as one zero-padded word, for the caller to finish.
    @inline(__always)
    static func fold(_ raw: UnsafeRawBufferPointer, _ initial: UInt64, _ step: (UInt64, UInt64) -> UInt64) -> (hash: UInt64, tail: UInt64) {
        var hash = initial
        var index = 0
        while index + 8 <= raw.count {
            hash = step(hash, raw.loadUnaligned(fromByteOffset: index, as: UInt64.self))
            index += 8
        }
        var tail: UInt64 = 0
        var shift: UInt64 = 0
        while index < raw.count {
            tail |= UInt64(raw[index]) << shift
            shift += 8
            index += 1
        }
        return (hash, tail)
    }
}
