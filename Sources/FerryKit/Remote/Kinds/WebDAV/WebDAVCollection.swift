import Foundation

/// The collection a WebDAV store syncs, and the mapping between member hrefs and record ids.
///
/// A record's id is its member href, percent-decoded, relative to the collection
/// (`/dav/book/a%20b.vcf` in `/dav/book/` → `a b.vcf`); an href outside the collection keeps
/// its whole decoded path. The href as the server sent it is what later requests use.
///
/// When the URL redirects, members are named relative to where it leads (``moved(to:followed:)``):
/// a server that moved `/old/book/` to `/dav/book/` names its members `/dav/book/...`.
public struct WebDAVCollection: Sendable, Equatable {
    /// The collection URL requests go to, with a trailing slash.
    public let url: String
    /// The collection's decoded path, with a trailing slash (`/dav/book/`): ids are relative
    /// to it.
    public let path: String
    /// ``path`` as sent, percent-encoded.
    private let encodedPath: String

    /// `nil` for a URL that is not absolute http(s).
    public init?(url: String) {
        var url = url
        if !url.hasSuffix("/") { url += "/" }
        guard let parsed = URLComponents(string: url), let scheme = parsed.scheme?.lowercased(),
              scheme == "http" || scheme == "https", parsed.host != nil else { return nil }
        self.url = url
        encodedPath = parsed.percentEncodedPath.hasSuffix("/") ? parsed.percentEncodedPath : parsed.percentEncodedPath + "/"
        let path = parsed.percentEncodedPath.removingPercentEncoding ?? parsed.percentEncodedPath
        self.path = path.hasSuffix("/") ? path : path + "/"
    }

    private init(url: String, path: String, encodedPath: String) {
        self.url = url
        self.path = path
        self.encodedPath = encodedPath
    }

    /// The collection at the URL a response came from, without its query (the configured
    /// `query.NAME` parameters, which requests add again).
    public init?(answeredAt url: String) {
        guard var components = URLComponents(string: url) else { return nil }
        components.percentEncodedQuery = nil
        components.fragment = nil
        guard let string = components.string else { return nil }
        self.init(url: string)
    }

    /// This collection once a request to ``url`` was redirected to `found`: members named
    /// relative to `found`'s path, and requests sent to `found` when `followed`, or still to
    /// ``url`` (through the redirect) when not. Nil when nothing changes.
    public func moved(to found: WebDAVCollection, followed: Bool) -> WebDAVCollection? {
        let moved = followed ? found : WebDAVCollection(url: url, path: found.path, encodedPath: found.encodedPath)
        return moved == self ? nil : moved
    }

    /// The record id of a member href; `nil` for the collection itself or an empty href.
    public func id(forHref href: String) -> String? {
        // Called for every member of every answer, so it scans bytes rather than going through
        // Foundation (range(of:), removingPercentEncoding were a tenth of a first sync's CPU).
        let bytes = href.utf8
        var start = bytes.startIndex
        if let authority = href.authorityStart {
            // An absolute URL: keep its path only.
            start = bytes[authority...].firstIndex(of: UInt8(ascii: "/")) ?? bytes.endIndex
        }
        let end = bytes[start...].firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? bytes.endIndex
        let encodedPath = href[start..<end]
        let decoded = Self.percentDecoded(encodedPath) ?? String(encodedPath)
        if decoded.isEmpty { return nil }
        if decoded.hasPrefix(path) {
            let relative = String(decoded.dropFirst(path.count))
            return relative.isEmpty ? nil : relative
        }
        if decoded + "/" == path { return nil }
        return decoded
    }

    /// The href of a member by its record id (the inverse of ``id(forHref:)``): the
    /// collection's path and the id, percent-encoded as a path.
    public func href(forID id: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "%#?;")
        // A member outside the collection kept its whole path as its id.
        if id.hasPrefix("/") { return id.addingPercentEncoding(withAllowedCharacters: allowed) ?? id }
        return encodedPath + (id.addingPercentEncoding(withAllowedCharacters: allowed) ?? id)
    }

    /// The absolute URL of an href (a path, or already absolute) on the collection's server.
    public func url(forHref href: String) -> String {
        if href.authorityStart != nil { return href }
        guard let authority = url.authorityStart,
              let pathStart = url[authority...].firstIndex(of: "/") else { return url + href }
        return String(url[..<pathStart]) + (href.hasPrefix("/") ? href : "/" + href)
    }

    /// `%XX` sequences decoded as UTF-8; nil when a sequence is malformed or the result is not
    /// UTF-8 (what Foundation's `removingPercentEncoding` does).
    static func percentDecoded(_ text: Substring) -> String? {
        guard text.utf8.contains(UInt8(ascii: "%")) else { return String(text) }
        var decoded: [UInt8] = []
        decoded.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                decoded.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
            decoded.append(high << 4 | low)
        }
        return String(validating: decoded, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
