import Foundation

extension MultistatusParser {
    /// Throws at a processing instruction without data (`<?name?>`).
    ///
    /// swift-corelibs-foundation's XMLParser (Swift 6.3) passes such an instruction's NULL data
    /// to `strlen` and the process dies with SIGSEGV, so any server, or anything answering on
    /// its URL, could stop ferryd with a seven-byte body (found by the `multistatus` libFuzzer
    /// target). WebDAV bodies carry no processing instructions besides the XML declaration,
    /// which always has data; an instruction with data (`<?name data?>`, even `<?name ?>`) parses
    /// normally. The scan is byte-wise and also refuses the pattern inside a comment or CDATA
    /// section, where it would have been harmless: such a body is far rarer than the crash is bad.
    static func requireProcessingInstructionsWithData(_ data: Data) throws(Failure) {
        let offset: Int? = data.withUnsafeBytes { raw -> Int? in
            let bytes = raw.bindMemory(to: UInt8.self)
            var index = 0
            while index + 1 < bytes.count {
                guard bytes[index] == UInt8(ascii: "<"), bytes[index + 1] == UInt8(ascii: "?") else {
                    index += 1
                    continue
                }
                // The target: everything up to white space or '?'.
                var end = index + 2
                while end < bytes.count, !Self.isSpace(bytes[end]), bytes[end] != UInt8(ascii: "?") { end += 1 }
                if end + 1 < bytes.count, bytes[end] == UInt8(ascii: "?"), bytes[end + 1] == UInt8(ascii: ">") {
                    return index
                }
                // Not from `end`: another "<?" may start inside this one's target (`<?<?x?>`,
                // found by the fuzzer after the first version of this scan skipped it).
                index += 2
            }
            return nil
        }
        guard let offset else { return }
        var line = 1
        var column = 1
        for byte in data.prefix(offset) {
            if byte == UInt8(ascii: "\n") {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1
            }
        }
        throw Failure(line: line, column: column, message: "processing instruction without data (<?name?>): refused, the XML parser cannot take it")
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }
}
