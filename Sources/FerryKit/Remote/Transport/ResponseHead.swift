/// The status line and headers of the final response (after redirects).
public struct ResponseHead: Sendable, Equatable {
    /// The HTTP status; 200 for a file:// URL that was read.
    public let status: Int
    public let headers: HTTPHeaders
    /// The URL that answered, after redirects, without credentials.
    public let url: String
    /// Redirects followed to reach this response (0: the request's own URL answered).
    public internal(set) var redirects = 0
    /// Whether every redirect followed was permanent (301, 308): the configured URL has moved.
    public internal(set) var isPermanentlyRedirected = false
    /// Whether a redirect led to an origin the request's own does not trust, so the request
    /// that got this answer went without the store's credentials.
    public internal(set) var credentialsWithheld = false

    public init(status: Int, headers: HTTPHeaders, url: String) {
        self.status = status
        self.headers = headers
        self.url = url
    }
}

/// What a finished transfer measured.
public struct TransferMetrics: Sendable, Equatable {
    public let status: Int
    public let bodyBytes: Int64
    /// Seconds from start to the last byte.
    public let totalTime: Double
    /// New connections this transfer opened (0 when it reused one).
    public let newConnections: Int
}
