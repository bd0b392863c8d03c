import Foundation

/// The collection a WebDAV store syncs, and the mapping between member hrefs and record ids.
///
/// A record's id is its member href, percent-decoded, relative to the collection
/// (`/dav/book/a%20b.vcf` in `/dav/book/` → `a b.vcf`); an href outside the collection keeps
/// its whole decoded path. The href as the server sent it is what later requests use.
public struct WebDAVCollection: Sendable, Equatable {
    /// The collection URL, with a trailing slash.
    public let url: String
    /// The collection's decoded path, with a trailing slash (`/dav/book/`).
    public let path: String

    /// `nil` for a URL that is not absolute http(s).
    public init?(url: String) {
        var url = url
        if !url.hasSuffix("/") { url += "/" }
        guard let parsed = URLComponents(string: url), let scheme = parsed.scheme?.lowercased(),
              scheme == "http" || scheme == "https", parsed.host != nil else { return nil }
        self.url = url
        let path = parsed.percentEncodedPath.removingPercentEncoding ?? parsed.percentEncodedPath
        self.path = path.hasSuffix("/") ? path : path + "/"
    }

    /// The record id of a member href; `nil` for the collection itself or an empty href.
    public func id(forHref href: String) -> String? {
        var encodedPath = href
        if let schemeEnd = href.range(of: "://") {
            // An absolute URL: keep its path only.
            let afterAuthority = href[schemeEnd.upperBound...].firstIndex(of: "/") ?? href.endIndex
            encodedPath = String(href[afterAuthority...])
        }
        if let query = encodedPath.firstIndex(where: { $0 == "?" || $0 == "#" }) {
            encodedPath = String(encodedPath[..<query])
        }
        let decoded = encodedPath.removingPercentEncoding ?? encodedPath
        if decoded.isEmpty { return nil }
        if decoded.hasPrefix(path) {
            let relative = String(decoded.dropFirst(path.count))
            return relative.isEmpty ? nil : relative
        }
        if decoded + "/" == path { return nil }
        return decoded
    }
}
