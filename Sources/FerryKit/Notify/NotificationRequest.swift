/// One HTTP request as the listener received it, whole: what verification reads.
public struct NotificationRequest: Sendable, Equatable {
    public var method: String
    /// The path without its query.
    public var path: String
    /// What followed `?`, as sent (still percent-encoded); nil without one.
    public var query: String?
    /// Header names as sent, with their values; looked up without regard to case.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(method: String, target: String, headers: [(name: String, value: String)], body: [UInt8]) {
        self.method = method
        if let mark = target.firstIndex(of: "?") {
            path = String(target[..<mark])
            query = String(target[target.index(after: mark)...])
        } else {
            path = target
            query = nil
        }
        self.headers = headers
        self.body = body
    }

    /// The first value of header `name` (any case), trimmed of blanks.
    public func header(_ name: String) -> String? {
        let lowered = name.lowercased()
        return headers.first { $0.name.lowercased() == lowered }.map { $0.value.trimmingBlanks }
    }

    /// The first value of query parameter `name`, percent-decoded (`+` as a space).
    public func queryParameter(_ name: String) -> String? {
        guard let query else { return nil }
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.first.map(String.init) == name else { continue }
            return PercentDecoding.decode(parts.count > 1 ? parts[1] : "", plusIsSpace: true)
        }
        return nil
    }

    public static func == (lhs: NotificationRequest, rhs: NotificationRequest) -> Bool {
        lhs.method == rhs.method && lhs.path == rhs.path && lhs.query == rhs.query && lhs.body == rhs.body
            && lhs.headers.map(\.name) == rhs.headers.map(\.name) && lhs.headers.map(\.value) == rhs.headers.map(\.value)
    }
}

/// `%XX` escapes decoded; an escape that is not two hex digits stays as written.
enum PercentDecoding {
    static func decode(_ text: some StringProtocol, plusIsSpace: Bool = false, only: Set<UInt8>? = nil) -> String {
        let bytes = Array(text.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%"), index + 2 < bytes.count,
               let value = SignatureEncoding.bytes(hex: String(decoding: bytes[index + 1...index + 2], as: UTF8.self))?.first,
               only?.contains(value) ?? true {
                out.append(value)
                index += 3
                continue
            }
            out.append(plusIsSpace && byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
            index += 1
        }
        return String(decoding: out, as: UTF8.self)
    }
}

extension String {
    /// Without leading and trailing spaces and tabs (what HTTP allows around a header value).
    var trimmingBlanks: String {
        var slice = Substring(self)
        while let first = slice.first, first == " " || first == "\t" { slice.removeFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice.removeLast() }
        return String(slice)
    }
}
