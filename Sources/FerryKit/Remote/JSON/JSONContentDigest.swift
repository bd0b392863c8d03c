/// A version for records that carry none (`version-field = none`): a digest of the record's
/// JSON, so a record whose content changed has a new version and one listed again unchanged
/// has the same.
///
/// Whitespace between tokens is left out, so the same record pretty-printed on one endpoint and
/// compact on another (a listing and a read of one record) has one digest; member order and
/// number spelling are kept, as an API's own serializer keeps them from one answer to the next.
/// 64-bit FNV-1a, as 16 hex digits: stable across runs and builds, and a change that keeps the
/// digest is a 1-in-2^64 chance.
enum JSONContentDigest {
    static func of(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        var hash = FNV1a.offsetBasis
        var inString = false
        var escaped = false
        for byte in bytes {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
            } else {
                switch byte {
                case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"): continue
                case UInt8(ascii: "\""): inString = true
                default: break
                }
            }
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    static func of(_ bytes: some Sequence<UInt8>) -> String {
        let array = Array(bytes)
        return array.withUnsafeBufferPointer { of($0) }
    }
}
