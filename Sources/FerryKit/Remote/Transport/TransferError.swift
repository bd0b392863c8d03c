/// Why a transfer failed, as the session's delegate receives it.
///
/// HTTP statuses are not transfer errors: a 503 is a response, and the remote-store kinds
/// decide what it means. `url` never carries credentials.
public struct TransferError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        /// No connection within the connect timeout.
        case connectTimeout
        /// The whole transfer took longer than the total timeout.
        case totalTimeout
        /// Fewer bytes per second than the low-speed limit, for the low-speed time: a stall.
        case stalled
        case tooManyRedirects
        /// The body exceeded the configured maximum response size.
        case responseTooLarge
        /// Certificate verification or the TLS handshake failed.
        case tls
        case nameResolution
        /// Connection refused, reset, or closed before a response.
        case connection
        /// The connection ended before the announced body was complete.
        case truncated
        /// The URL's scheme (or a redirect's) is not among the allowed protocols.
        case protocolNotAllowed
        /// A redirect from https to http, refused: it would send the request in clear.
        case insecureRedirect
        case invalidURL
        /// A local file could not be read (file:// stores).
        case fileNotReadable
        /// The credential a request needed could not be had: an OAuth2 token endpoint refused
        /// the refresh token or the client, or there is no refresh token to send. Someone has
        /// to authorise again.
        case credentialsRefused
        /// An OAuth2 token endpoint answered, but not with a token: a server error, a rate
        /// limit, a body that is not a token response.
        case tokenEndpoint
        case other
    }

    public let kind: Kind
    /// The request URL with any user information removed.
    public let url: String
    /// libcurl's code, when libcurl reported the failure.
    public let curl: CurlError?
    /// libcurl's own message for this transfer (never includes headers or bodies).
    public let detail: String

    public init(kind: Kind, url: String, curl: CurlError? = nil, detail: String) {
        self.kind = kind
        self.url = url
        self.curl = curl
        self.detail = detail
    }

    /// Whether trying again later may succeed (a full disk or a bad URL will not fix itself).
    public var isTransient: Bool {
        switch kind {
        case .connectTimeout, .totalTimeout, .stalled, .connection, .truncated, .nameResolution, .tokenEndpoint, .other:
            true
        case .tooManyRedirects, .responseTooLarge, .tls, .protocolNotAllowed, .insecureRedirect, .invalidURL, .fileNotReadable,
             .credentialsRefused:
            false
        }
    }

    public var description: String {
        "\(kind) for \(url): \(detail)"
    }

}

extension TransferError.Kind {
    /// Lets `catch TransferError.Kind.stalled` match a thrown ``TransferError``.
    public static func ~= (pattern: TransferError.Kind, value: any Error) -> Bool {
        (value as? TransferError)?.kind == pattern
    }
}
