import Testing
@testable import FerryKit

/// HMAC-SHA256 against RFC 4231's vectors, and the encodings signatures travel in.
@Suite("HMAC-SHA256")
struct HMACSHA256Tests {
    @Test func hmacOfRFC4231Cases() {
        // Case 1: a 20-byte key.
        #expect(SignatureEncoding.hex(HMACSHA256.authenticationCode(key: [UInt8](repeating: 0x0b, count: 20), message: Array("Hi There".utf8)))
                == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        // Case 2: a key shorter than the block.
        #expect(SignatureEncoding.hex(HMACSHA256.authenticationCode(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8)))
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        // Case 6: a key longer than the block is hashed first.
        #expect(SignatureEncoding.hex(HMACSHA256.authenticationCode(key: [UInt8](repeating: 0xaa, count: 131),
                                                                    message: Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8)))
                == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
    }

    /// FIPS 180-2's examples: "abc", and the empty message.
    @Test func sha256OfTheStandardsExamples() {
        #expect(SignatureEncoding.hex(HMACSHA256.digest(Array("abc".utf8))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SignatureEncoding.hex(HMACSHA256.digest([UInt8]())) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    @Test func constantTimeComparisonIsEquality() {
        #expect(HMACSHA256.constantTimeEquals([1, 2, 3], [1, 2, 3]))
        #expect(!HMACSHA256.constantTimeEquals([1, 2, 3], [1, 2, 4]))
        #expect(!HMACSHA256.constantTimeEquals([1, 2, 3], [1, 2]))
        #expect(HMACSHA256.constantTimeEquals([], []))
    }

    @Test(arguments: [[], [0], [0, 1], [0, 1, 2], [255, 254, 253, 252]] as [[UInt8]])
    func base64AndHexRoundTrip(_ bytes: [UInt8]) {
        #expect(SignatureEncoding.bytes(base64: SignatureEncoding.base64(bytes)) == bytes)
        #expect(SignatureEncoding.bytes(hex: SignatureEncoding.hex(bytes)) == bytes)
    }

    @Test func encodingsMatchRFC4648_andRefuseWhatIsNotOne() {
        #expect(SignatureEncoding.base64(Array("foobar".utf8)) == "Zm9vYmFy")
        #expect(SignatureEncoding.base64(Array("fo".utf8)) == "Zm8=")
        #expect(SignatureEncoding.bytes(base64: "Zm8") == Array("fo".utf8))
        #expect(SignatureEncoding.bytes(base64: "Zm8=x") == nil)
        #expect(SignatureEncoding.bytes(base64: "Z m8=") == nil)
        #expect(SignatureEncoding.bytes(hex: "abc") == nil)
        #expect(SignatureEncoding.bytes(hex: "zz") == nil)
        #expect(SignatureEncoding.bytes(hex: "ABcd") == [0xab, 0xcd])
    }
}
