import Foundation

/// One request for a ``RemoteSession``.
public struct HTTPRequest: Sendable, CustomStringConvertible {
    public var method: String
    public var url: String
    public var headers: HTTPHeaders
    public var body: Data?

    public init(method: String = "GET", url: String, headers: HTTPHeaders = HTTPHeaders(), body: Data? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }

    /// Method and URL without credentials; headers are left out because they carry secrets.
    public var description: String {
        "\(method) \(url.redactingUserInfo)"
    }
}

extension String {
    /// The URL with any `user:password@` part replaced, for logs and errors.
    public var redactingUserInfo: String {
        guard let scheme = range(of: "://"),
              let at = self[scheme.upperBound...].firstIndex(of: "@") else { return self }
        let authorityEnd = self[scheme.upperBound...].firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? endIndex
        guard at < authorityEnd else { return self }
        return String(self[..<scheme.upperBound]) + "REDACTED@" + String(self[index(after: at)...])
    }
}
