import Foundation

/// One request for a ``RemoteSession``.
public struct HTTPRequest: Sendable, Equatable, CustomStringConvertible {
    public var method: String
    public var url: String
    public var headers: HTTPHeaders
    public var body: Data?
    /// A POST that only reads (a search, a GraphQL query, a listing asked for with a body):
    /// sending it twice does what sending it once does.
    public var readsOnly = false

    public init(method: String = "GET", url: String, headers: HTTPHeaders = HTTPHeaders(), body: Data? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }

    /// Whether sending the request twice does what sending it once does (RFC 9110 §9.2.2, and
    /// WebDAV's reads). A POST or a PATCH is not: a second send may make a second record.
    public var isIdempotent: Bool {
        readsOnly || ["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE", "PROPFIND", "REPORT"].contains(method.uppercased())
    }

    /// Whether the request only reads: asked again after a failure, it changes nothing
    /// (``ReadRetry``). A PUT or a DELETE is idempotent but writes: whether its lost answer
    /// took effect is the push's to find out.
    public var isReadOnly: Bool {
        readsOnly || ["GET", "HEAD", "OPTIONS", "PROPFIND", "REPORT"].contains(method.uppercased())
    }

    /// Method and URL without credentials; headers are left out because they carry secrets.
    public var description: String {
        "\(method) \(url.redactingUserInfo)"
    }
}

extension String {
    /// The URL with any `user:password@` part replaced, for logs and errors.
    public var redactingUserInfo: String {
        guard let authority = authorityStart else { return self }
        let bytes = utf8
        let authorityEnd = bytes[authority...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? bytes.endIndex
        guard let at = bytes[authority..<authorityEnd].firstIndex(of: UInt8(ascii: "@")) else { return self }
        return String(self[..<authority]) + "REDACTED@" + String(self[bytes.index(after: at)...])
    }

    /// Where an absolute URL's authority begins: just past its first `://`; nil without one.
    /// On bytes, not through Foundation's range(of:): it runs for every response and every
    /// WebDAV member href.
    var authorityStart: String.Index? {
        let bytes = utf8
        var colon = bytes.firstIndex(of: UInt8(ascii: ":"))
        while let found = colon, !bytes[bytes.index(after: found)...].starts(with: "//".utf8) {
            colon = bytes[bytes.index(after: found)...].firstIndex(of: UInt8(ascii: ":"))
        }
        return colon.map { bytes.index($0, offsetBy: 3) }
    }
}
