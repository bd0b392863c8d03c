import Foundation

/// Refuses, before swift-corelibs-foundation's XMLParser sees them, the bytes it cannot take
/// safely, chunk by chunk, so a body can be screened while it downloads:
///
/// - **Invalid UTF-8.** XMLParser traps (a force-unwrapped String) when libxml2 hands it an
///   element name that is not valid UTF-8, which a mutated body can make it do (found by
///   WebDAVFuzzTests). WebDAV bodies are UTF-8 (both servers, RFC 4918 §8.1 in practice), so
///   anything else is refused.
/// - **A processing instruction without data** (`<?name?>`). XMLParser (Swift 6.3) passes its
///   NULL data to `strlen` and the process dies with SIGSEGV, so any server, or anything
///   answering on its URL, could stop ferryd with a seven-byte body (found by the
///   `multistatus` libFuzzer target). WebDAV bodies carry no processing instructions besides
///   the XML declaration, which always has data; an instruction with data (`<?name data?>`,
///   even `<?name ?>`) passes. The scan is byte-wise and also refuses the pattern inside a
///   comment or CDATA section, where it would have been harmless: such a body is far rarer
///   than the crash is bad.
///
/// Chunk boundaries do not matter: a UTF-8 sequence or an instruction split across two
/// chunks is judged as if the body had come whole (`MultistatusScreenTests` checks this
/// against random splits). A failure names the line and column of the offending sequence or
/// instruction, and ``refusedOffset`` says where in the body it starts: every byte before it
/// is safe to parse.
struct MultistatusScreen {
    // UTF-8: continuation bytes still owed by the current sequence, and the range the next
    // one must fall in (narrower after E0, ED, F0 and F4: no overlongs, surrogates or values
    // past U+10FFFF).
    private var owed = 0
    private var lower: UInt8 = 0x80
    private var upper: UInt8 = 0xBF
    /// Where the current sequence began: a failure points at its first byte.
    private var sequenceStart = (line: 1, column: 1, offset: 0)

    // Processing instructions: the previous byte was '<'; a target started by "<?" runs up to
    // here; that target just ended in '?', so a '>' now closes an instruction without data.
    // Every '?' ends the open target, so at most one is open (`<?<?x?>`: the first target ends
    // at the second '?', which opens the next), and its '<' is where a failure points.
    private var afterLessThan = false
    private var inTarget = false
    private var questionEndsTarget = false
    private var targetStart = (line: 1, column: 1, offset: 0)
    private var endedTargetStart = (line: 1, column: 1, offset: 0)

    // Position of the next byte, for failures.
    private var line = 1
    private var column = 1
    /// Bytes screened so far.
    private(set) var offset = 0
    /// After a failure: the body offset of the refused sequence's or instruction's first byte.
    private(set) var refusedOffset = 0

    /// Screens the next chunk of the body.
    mutating func screen(_ bytes: UnsafeRawBufferPointer) throws(MultistatusParser.Failure) {
        for byte in bytes {
            try screen(byte)
        }
    }

    mutating func screen(_ data: Data) throws(MultistatusParser.Failure) {
        // withUnsafeBytes takes a rethrowing closure, which loses the typed error: carry it out.
        var failure: MultistatusParser.Failure?
        data.withUnsafeBytes { raw in
            do throws(MultistatusParser.Failure) {
                try screen(raw)
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
    }

    /// The body ended: a UTF-8 sequence cut short by the end is invalid.
    mutating func finish() throws(MultistatusParser.Failure) {
        if owed > 0 {
            throw refuse(at: sequenceStart, "body is not valid UTF-8")
        }
    }

    private mutating func refuse(at start: (line: Int, column: Int, offset: Int), _ message: String) -> MultistatusParser.Failure {
        refusedOffset = start.offset
        return MultistatusParser.Failure(line: start.line, column: start.column, message: message)
    }

    private mutating func screen(_ byte: UInt8) throws(MultistatusParser.Failure) {
        try screenUTF8(byte)

        if questionEndsTarget, byte == UInt8(ascii: ">") {
            throw refuse(at: endedTargetStart, "processing instruction without data (<?name?>): refused, the XML parser cannot take it")
        }
        questionEndsTarget = false
        switch byte {
        case UInt8(ascii: "?"):
            // Ends the open target ("<?name?"), and may begin a new one ("<?").
            questionEndsTarget = inTarget
            endedTargetStart = targetStart
            inTarget = afterLessThan
            // The '<' is one byte, just before this '?' on the same line.
            if inTarget { targetStart = (line, column - 1, offset - 1) }
        case 0x20, 0x09, 0x0A, 0x0D:
            inTarget = false
        default:
            break
        }
        afterLessThan = byte == UInt8(ascii: "<")

        if byte == 0x0A {
            line += 1
            column = 1
        } else if byte & 0xC0 != 0x80 {
            column += 1
        }
        offset += 1
    }

    private mutating func screenUTF8(_ byte: UInt8) throws(MultistatusParser.Failure) {
        if owed > 0 {
            guard byte >= lower, byte <= upper else {
                throw refuse(at: sequenceStart, "body is not valid UTF-8")
            }
            owed -= 1
            lower = 0x80
            upper = 0xBF
            return
        }
        if byte < 0x80 { return }
        sequenceStart = (line, column, offset)
        switch byte {
        case 0xC2...0xDF:
            owed = 1
        case 0xE0:
            owed = 2
            lower = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF:
            owed = 2
        case 0xED:
            owed = 2
            upper = 0x9F
        case 0xF0:
            owed = 3
            lower = 0x90
        case 0xF1...0xF3:
            owed = 3
        case 0xF4:
            owed = 3
            upper = 0x8F
        default:
            throw refuse(at: (line, column, offset), "body is not valid UTF-8")
        }
    }
}
