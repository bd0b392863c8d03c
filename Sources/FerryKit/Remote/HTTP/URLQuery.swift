import Foundation

/// Query strings built by hand, because the URL a request goes to must be exactly the one a
/// page named (Foundation's `URLComponents` re-encodes what it did not write).
enum URLQuery {
    /// Percent-encodes a query parameter name or value (RFC 3986 unreserved characters pass).
    static func encode(_ value: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value
    }

    /// `url` with query parameter `name` set to `value` (replacing any existing one); a
    /// fragment is dropped.
    static func setting(_ name: String, to value: String, in url: String) -> String {
        let fragmentless = url.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0]
        let parts = fragmentless.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let encodedName = encode(name)
        var items = parts.count > 1 ? parts[1].split(separator: "&").map(String.init) : []
        items.removeAll { $0 == encodedName || $0.hasPrefix(encodedName + "=") }
        items.append(encodedName + "=" + encode(value))
        return String(parts[0]) + "?" + items.joined(separator: "&")
    }
}
