/// The validating core of ``JSONRecordScanner``: a recursive-descent RFC 8259 parser over raw
/// bytes that skips what nobody asked for and reports where wanted paths are.
///
/// Why hand-written: Foundation's JSON decoders run near 30 MB/s here (NOTES), the first wall of
/// a sync. This parser allocates nothing while validating and checks string bytes eight at a
/// time (SWAR), which is where most of a page's bytes are.
struct JSONByteParser {
    /// A scalar seen at a wanted path: its kind and byte range (strings without their quotes).
    struct Capture {
        enum Kind: Equatable { case string(escaped: Bool), number(integer: Bool), bool(Bool), null, composite }
        var kind: Kind
        var range: Range<Int>
    }

    let base: UnsafePointer<UInt8>
    let count: Int
    let maxDepth: Int
    var index = 0
    var depth = 0

    init(base: UnsafePointer<UInt8>, count: Int, maxDepth: Int) {
        self.base = base
        self.count = count
        self.maxDepth = maxDepth
    }

    // MARK: Errors

    func fail(_ reason: String, at offset: Int? = nil) -> JSONScanError {
        JSONScanError(.syntax, offset: offset ?? index, reason: reason)
    }

    func unexpected() -> JSONScanError {
        guard index < count else { return fail("unexpected end of input") }
        let byte = base[index]
        if byte >= 0x20, byte < 0x7F {
            return fail("unexpected character '\(Character(Unicode.Scalar(byte)))'")
        }
        return fail("unexpected byte 0x\(String(byte, radix: 16))")
    }

    // MARK: Whitespace and punctuation

    @inline(__always)
    mutating func skipWhitespace() {
        while index < count {
            let byte = base[index]
            guard byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 else { return }
            index += 1
        }
    }

    @inline(__always)
    func peek() throws(JSONScanError) -> UInt8 {
        guard index < count else { throw fail("unexpected end of input") }
        return base[index]
    }

    @inline(__always)
    mutating func expect(_ byte: UInt8) throws(JSONScanError) {
        guard index < count, base[index] == byte else { throw unexpected() }
        index += 1
    }

    mutating func enter() throws(JSONScanError) {
        depth += 1
        guard depth <= maxDepth else { throw fail("nesting deeper than \(maxDepth)") }
    }

    // MARK: Values

    /// Validates and skips one value starting at `index` (no leading whitespace).
    mutating func skipValue() throws(JSONScanError) {
        switch try peek() {
        case UInt8(ascii: "{"): try skipObject()
        case UInt8(ascii: "["): try skipArray()
        case UInt8(ascii: "\""): _ = try skipString()
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): _ = try skipNumber()
        case UInt8(ascii: "t"): try skipLiteral("true")
        case UInt8(ascii: "f"): try skipLiteral("false")
        case UInt8(ascii: "n"): try skipLiteral("null")
        default: throw unexpected()
        }
    }

    /// Skips one value and says what it was, for a wanted path.
    mutating func captureValue() throws(JSONScanError) -> Capture {
        let start = index
        switch try peek() {
        case UInt8(ascii: "{"):
            try skipObject()
            return Capture(kind: .composite, range: start..<index)
        case UInt8(ascii: "["):
            try skipArray()
            return Capture(kind: .composite, range: start..<index)
        case UInt8(ascii: "\""):
            let escaped = try skipString()
            return Capture(kind: .string(escaped: escaped), range: (start + 1)..<(index - 1))
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            let integer = try skipNumber()
            return Capture(kind: .number(integer: integer), range: start..<index)
        case UInt8(ascii: "t"):
            try skipLiteral("true")
            return Capture(kind: .bool(true), range: start..<index)
        case UInt8(ascii: "f"):
            try skipLiteral("false")
            return Capture(kind: .bool(false), range: start..<index)
        case UInt8(ascii: "n"):
            try skipLiteral("null")
            return Capture(kind: .null, range: start..<index)
        default:
            throw unexpected()
        }
    }

    mutating func skipObject() throws(JSONScanError) {
        try enter()
        index += 1
        skipWhitespace()
        if try peek() == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return
        }
        while true {
            guard try peek() == UInt8(ascii: "\"") else { throw unexpected() }
            _ = try skipString()
            skipWhitespace()
            try expect(UInt8(ascii: ":"))
            skipWhitespace()
            try skipValue()
            skipWhitespace()
            let byte = try peek()
            index += 1
            if byte == UInt8(ascii: ",") {
                skipWhitespace()
                continue
            }
            guard byte == UInt8(ascii: "}") else {
                index -= 1
                throw unexpected()
            }
            depth -= 1
            return
        }
    }

    mutating func skipArray() throws(JSONScanError) {
        try enter()
        index += 1
        skipWhitespace()
        if try peek() == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return
        }
        while true {
            try skipValue()
            skipWhitespace()
            let byte = try peek()
            index += 1
            if byte == UInt8(ascii: ",") {
                skipWhitespace()
                continue
            }
            guard byte == UInt8(ascii: "]") else {
                index -= 1
                throw unexpected()
            }
            depth -= 1
            return
        }
    }

    mutating func skipLiteral(_ literal: StaticString) throws(JSONScanError) {
        let length = literal.utf8CodeUnitCount
        let bytes = literal.utf8Start
        for offset in 0..<length {
            guard index + offset < count, base[index + offset] == bytes[offset] else {
                index += offset
                throw unexpected()
            }
        }
        index += length
    }

    /// Skips a number; returns whether it is an integer (no fraction, no exponent).
    mutating func skipNumber() throws(JSONScanError) -> Bool {
        var integer = true
        if base[index] == UInt8(ascii: "-") { index += 1 }
        guard index < count else { throw fail("unexpected end of input in a number") }
        let first = base[index]
        if first == UInt8(ascii: "0") {
            index += 1
        } else if first >= UInt8(ascii: "1"), first <= UInt8(ascii: "9") {
            index += 1
            skipDigits()
        } else {
            throw fail("expected a digit")
        }
        if index < count, base[index] == UInt8(ascii: ".") {
            integer = false
            index += 1
            try requireDigits()
        }
        if index < count, base[index] | 0x20 == UInt8(ascii: "e") {
            integer = false
            index += 1
            if index < count, base[index] == UInt8(ascii: "+") || base[index] == UInt8(ascii: "-") { index += 1 }
            try requireDigits()
        }
        return integer
    }

    @inline(__always)
    private mutating func skipDigits() {
        while index < count, base[index] &- UInt8(ascii: "0") < 10 { index += 1 }
    }

    private mutating func requireDigits() throws(JSONScanError) {
        guard index < count, base[index] &- UInt8(ascii: "0") < 10 else { throw fail("expected a digit") }
        skipDigits()
    }

    // MARK: Strings

    /// Skips a string starting at its opening quote, validating escapes and UTF-8. Returns
    /// whether it contained escapes (then its bytes must be unescaped before use).
    mutating func skipString() throws(JSONScanError) -> Bool {
        index += 1
        var escaped = false
        while true {
            // Eight bytes at a time while none is a quote, a backslash, a control or non-ASCII.
            while index + 8 <= count {
                let word = UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)
                let ones: UInt64 = 0x0101_0101_0101_0101
                let highs: UInt64 = 0x8080_8080_8080_8080
                let quote = word ^ (ones &* 0x22)
                let backslash = word ^ (ones &* 0x5C)
                let special = ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash)
                    | (word &- ones &* 0x20) | word
                if special & highs != 0 { break }
                index += 8
            }
            guard index < count else { throw fail("unterminated string") }
            let byte = base[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                return escaped
            } else if byte == UInt8(ascii: "\\") {
                escaped = true
                try skipEscape()
            } else if byte < 0x20 {
                throw fail("control character in a string")
            } else if byte >= 0x80 {
                try skipUTF8Sequence()
            } else {
                index += 1
            }
        }
    }

    private mutating func skipEscape() throws(JSONScanError) {
        let start = index
        index += 1
        guard index < count else { throw fail("unterminated string") }
        switch base[index] {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
             UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            index += 1
        case UInt8(ascii: "u"):
            index += 1
            let unit = try hexQuad()
            if unit >= 0xD800, unit <= 0xDBFF {
                guard index + 1 < count, base[index] == UInt8(ascii: "\\"), base[index + 1] == UInt8(ascii: "u") else {
                    throw fail("unpaired surrogate escape", at: start)
                }
                index += 2
                let low = try hexQuad()
                guard low >= 0xDC00, low <= 0xDFFF else { throw fail("unpaired surrogate escape", at: start) }
            } else if unit >= 0xDC00, unit <= 0xDFFF {
                throw fail("unpaired surrogate escape", at: start)
            }
        default:
            throw fail("invalid escape")
        }
    }

    private mutating func hexQuad() throws(JSONScanError) -> UInt32 {
        guard index + 4 <= count else { throw fail("unterminated \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let digit = Self.hexValue(base[index]) else { throw fail("invalid \\u escape") }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    static func hexValue(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
        default: nil
        }
    }

    /// One multi-byte UTF-8 sequence (RFC 3629: no overlongs, no surrogates, ≤ U+10FFFF).
    private mutating func skipUTF8Sequence() throws(JSONScanError) {
        let lead = base[index]
        var length: Int
        var low: UInt8 = 0x80
        var high: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; low = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; high = 0x9F
        case 0xF0: length = 4; low = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; high = 0x8F
        default: throw fail("invalid UTF-8")
        }
        guard index + length <= count else { throw fail("invalid UTF-8") }
        let second = base[index + 1]
        guard second >= low, second <= high else { throw fail("invalid UTF-8") }
        for offset in 2..<max(2, length) where base[index + offset] & 0xC0 != 0x80 {
            throw fail("invalid UTF-8")
        }
        index += length
    }

    // MARK: Keys

    /// Whether the key at `range` (between quotes) equals `component`.
    func keyEquals(_ range: Range<Int>, escaped: Bool, _ component: [UInt8]) -> Bool {
        if !escaped {
            guard range.count == component.count else { return false }
            return component.withUnsafeBufferPointer { wanted in
                for offset in 0..<wanted.count where base[range.lowerBound + offset] != wanted[offset] {
                    return false
                }
                return true
            }
        }
        return unescape(range) == component
    }

    /// The UTF-8 bytes of a validated string's contents with escapes resolved.
    func unescape(_ range: Range<Int>) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(range.count)
        var position = range.lowerBound
        while position < range.upperBound {
            let byte = base[position]
            guard byte == UInt8(ascii: "\\") else {
                output.append(byte)
                position += 1
                continue
            }
            let code = base[position + 1]
            position += 2
            switch code {
            case UInt8(ascii: "b"): output.append(0x08)
            case UInt8(ascii: "f"): output.append(0x0C)
            case UInt8(ascii: "n"): output.append(0x0A)
            case UInt8(ascii: "r"): output.append(0x0D)
            case UInt8(ascii: "t"): output.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = hex(at: position)
                position += 4
                if scalar >= 0xD800, scalar <= 0xDBFF {
                    // Validation guaranteed the low half follows.
                    let lowHalf = hex(at: position + 2)
                    position += 6
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (lowHalf - 0xDC00)
                }
                Self.appendUTF8(scalar, to: &output)
            default: output.append(code)
            }
        }
        return output
    }

    private func hex(at position: Int) -> UInt32 {
        var value: UInt32 = 0
        for offset in 0..<4 {
            value = value << 4 | (Self.hexValue(base[position + offset]) ?? 0)
        }
        return value
    }

    static func appendUTF8(_ scalar: UInt32, to output: inout [UInt8]) {
        switch scalar {
        case 0..<0x80:
            output.append(UInt8(scalar))
        case 0x80..<0x800:
            output.append(UInt8(0xC0 | scalar >> 6))
            output.append(UInt8(0x80 | scalar & 0x3F))
        case 0x800..<0x10000:
            output.append(UInt8(0xE0 | scalar >> 12))
            output.append(UInt8(0x80 | (scalar >> 6) & 0x3F))
            output.append(UInt8(0x80 | scalar & 0x3F))
        default:
            output.append(UInt8(0xF0 | scalar >> 18))
            output.append(UInt8(0x80 | (scalar >> 12) & 0x3F))
            output.append(UInt8(0x80 | (scalar >> 6) & 0x3F))
            output.append(UInt8(0x80 | scalar & 0x3F))
        }
    }

    /// The text of a captured string or number.
    func text(of capture: Capture) -> String {
        if case .string(escaped: true) = capture.kind {
            return String(decoding: unescape(capture.range), as: UTF8.self)
        }
        return String(decoding: UnsafeBufferPointer(start: base + capture.range.lowerBound, count: capture.range.count), as: UTF8.self)
    }
}
