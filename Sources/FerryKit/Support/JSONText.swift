/// JSON written by hand where an encoder would cost more than the work around it: the where
/// conditions of every Parse request, and the schedule ferryd publishes every second (with
/// 5,000 stores, `JSONEncoder` spent 50 ms a second on it).
enum JSONText {
    /// `text` as a JSON string (RFC 8259 §7): quotation mark, reverse solidus and control
    /// characters escaped, everything else written as it is.
    static func quoted(_ text: String) -> String {
        var out = "\""
        out.reserveCapacity(text.utf8.count + 2)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
        return out
    }
}
