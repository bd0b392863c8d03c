import COpenSSL

/// HMAC-SHA256 (RFC 2104), and the plain SHA-256 an older scheme signs with, by OpenSSL's
/// libcrypto, the library libcurl already brings: a webhook's signature is the only thing
/// ferryd hashes, and a hash is no code to write twice.
///
/// Only for verifying: nothing here keeps a secret from the memory of the process.
public enum HMACSHA256 {
    /// The HMAC-SHA256 of `message` under `key` (32 bytes).
    public static func authenticationCode(key: some Collection<UInt8>, message: some Collection<UInt8>) -> [UInt8] {
        let key = Array(key)
        let message = Array(message)
        var code = [UInt8](repeating: 0, count: 32)
        var length = 0
        let made = key.withUnsafeBytes { key in
            message.withUnsafeBytes { message in
                code.withUnsafeMutableBytes { code in
                    // A zero-length buffer's base address may be nil; libcrypto wants a pointer.
                    EVP_Q_mac(nil, "HMAC", nil, "SHA256", nil,
                              key.baseAddress ?? UnsafeRawPointer(bitPattern: 1), key.count,
                              message.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? UnsafePointer(bitPattern: 1), message.count,
                              code.baseAddress?.assumingMemoryBound(to: UInt8.self), code.count, &length)
                }
            }
        }
        // With a fixed algorithm and sizes, a failure here is a broken libcrypto install or a bug
        // of ours, not bad input: nothing to report to a sender.
        precondition(made != nil && length == 32, "libcrypto's HMAC-SHA256 failed")
        return code
    }

    /// The SHA-256 of `message`, with no key (32 bytes): HubSpot's older v1 and v2 signatures
    /// are a plain hash over the secret followed by the request, not an HMAC.
    public static func digest(_ message: some Collection<UInt8>) -> [UInt8] {
        let message = Array(message)
        var digest = [UInt8](repeating: 0, count: 32)
        var length = 0
        let made = message.withUnsafeBytes { message in
            digest.withUnsafeMutableBytes { digest in
                EVP_Q_digest(nil, "SHA256", nil, message.baseAddress ?? UnsafeRawPointer(bitPattern: 1), message.count,
                             digest.baseAddress?.assumingMemoryBound(to: UInt8.self), &length)
            }
        }
        precondition(made == 1 && length == 32, "libcrypto's SHA-256 failed")
        return digest
    }

    /// Whether two byte strings are equal, in a time that depends on their lengths only: a
    /// comparison that stops at the first difference tells a forger how much of a guess is right.
    public static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        guard !a.isEmpty else { return true }
        return a.withUnsafeBytes { a in b.withUnsafeBytes { b in CRYPTO_memcmp(a.baseAddress, b.baseAddress, a.count) == 0 } }
    }
}
