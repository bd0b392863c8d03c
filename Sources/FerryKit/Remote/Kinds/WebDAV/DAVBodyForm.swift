import Foundation

/// The one form of a vCard or iCalendar body in the replica, and the form on the wire.
///
/// `body` has LF line ends, as most programs that query the replica write text; what is sent
/// has CRLF, as RFC 6350 and RFC 5545 want. Comparisons of a record's text with what was sent
/// (conflicts, lost answers) read content lines and ignore line ends, so neither form is the
/// server's exact bytes, and neither needs to be: the ETag is the version.
enum DAVBodyForm {
    /// The text as RFC 6350 and RFC 5545 want it on the wire: every line ending CRLF. Pulled
    /// bodies have LF (they arrive inside XML, whose parsing normalises line ends), and people
    /// write either.
    static func wire(_ text: String) -> Data {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count + text.utf8.count / 32)
        var previous: UInt8 = 0
        for byte in text.utf8 {
            if byte == UInt8(ascii: "\n"), previous != UInt8(ascii: "\r") { bytes.append(UInt8(ascii: "\r")) }
            bytes.append(byte)
            previous = byte
        }
        return Data(bytes)
    }

    /// The text as the replica holds it: LF line ends, whatever the server sent. A body inside
    /// a multistatus answer arrives with LF (XML parsing turns CRLF into LF) unless the server
    /// escaped its CRs (`&#13;`) or sent it in CDATA; a body fetched alone arrives as stored,
    /// CRLF. One table would mix both.
    static func replica(_ data: Data) -> Data {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(data.count)
        var index = data.startIndex
        while index < data.endIndex {
            let byte = data[index]
            let next = data.index(after: index)
            if byte == UInt8(ascii: "\r"), next < data.endIndex, data[next] == UInt8(ascii: "\n") {
                index = next
                continue
            }
            bytes.append(byte)
            index = next
        }
        return Data(bytes)
    }

}
