import Foundation

/// What a page of a listing held, in 64 bits: a pass that reads a whole collection again
/// (a JSON collection without an incremental filter) skips the records of a page whose digest
/// is the one stored when that page was last merged, since they are exactly the records merged
/// then. A no-change pass then costs fetching and hashing, not a lookup per record.
///
/// The digest covers the page's URL, its bytes and a seed naming how they are read (the
/// store's identity, record path, id and version fields, size limit): change any and no page
/// matches. A page with a record that could not be stored gets no digest, so it is read again.
public struct PageDigest: Sendable, Equatable {
    /// The page's place in the chain, from 1.
    public var page: Int
    public var value: Int64

    public init(page: Int, value: Int64) {
        self.page = page
        self.value = value
    }

    /// A seed for ``of(url:body:seed:)`` from everything that decides what a page's bytes mean.
    public static func seed(_ parts: [String]) -> UInt64 {
        // 0xff never occurs in UTF-8: it ends each part, so ["ab", "c"] and ["a", "bc"] differ.
        parts.reduce(FNV1a.offsetBasis) { FNV1a.hash($1.utf8 + [0xff], into: $0) }
    }

    /// The digest of a page: eight bytes at a time through a multiply-xorshift mixer (about
    /// 2 GB/s here), so hashing every page of a first sync costs a few percent of it.
    public static func of(url: String, body: Data, seed: UInt64) -> Int64 {
        var hash = mix(seed ^ 0x9e37_79b9_7f4a_7c15 ^ UInt64(body.count))
        for byte in url.utf8 { hash = mix(hash ^ UInt64(byte)) }
        body.withUnsafeBytes { raw in
            let folded = WordFold.fold(raw, hash) { hash, word in mix(hash ^ word) }
            hash = mix(folded.hash ^ folded.tail ^ 0x8000_0000_0000_0000)
        }
        return Int64(bitPattern: hash)
    }

    /// The digest of a whole listing, pages 1 to the last in order; nil unless every page of
    /// the chain has a digest (a page with a record that could not be stored has none).
    public static func listing(_ digests: [Int: Int64]) -> Int64? {
        guard !digests.isEmpty else { return nil }
        var hash = mix(0x6c69_7374_696e_6773 ^ UInt64(digests.count))
        for page in 1...digests.count {
            guard let digest = digests[page] else { return nil }
            hash = mix(hash ^ UInt64(page))
            hash = mix(hash ^ UInt64(bitPattern: digest))
        }
        return Int64(bitPattern: hash)
    }

    private static func mix(_ value: UInt64) -> UInt64 {
        var z = value &* 0xbf58_476d_1ce4_e5b9
        z ^= z >> 31
        z = z &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 29)
    }
}
