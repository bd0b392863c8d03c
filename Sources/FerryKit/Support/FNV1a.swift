/// 64-bit FNV-1a over bytes: stable across runs and builds (unlike `Hasher`), for the short
/// fingerprints Ferry stores (a configured refresh token's, a page digest's seed).
enum FNV1a {
    static let offsetBasis: UInt64 = 0xcbf2_9ce4_8422_2325

    /// `hash` with `bytes` folded in, one at a time.
    static func hash(_ bytes: some Sequence<UInt8>, into hash: UInt64 = offsetBasis) -> UInt64 {
        bytes.reduce(hash) { ($0 ^ UInt64($1)) &* 0x0000_0100_0000_01b3 }
    }
}
