/// Transport settings of a ``RemoteSession``. Every limit is on by default: a sync daemon runs
/// unattended, so no transfer may hang or grow without bound.
public struct SessionConfiguration: Sendable, Equatable {
    /// Seconds allowed to establish a connection (including TLS).
    public var connectTimeout: Double = 10
    /// Seconds allowed for a whole transfer; 0 means no limit (rely on the low-speed limit).
    public var totalTimeout: Double = 300
    /// A transfer slower than this many bytes per second for ``lowSpeedTime`` seconds fails.
    public var lowSpeedLimit: Int = 1
    public var lowSpeedTime: Int = 30
    public var maxRedirects: Int = 5
    /// How often a read that failed as ``ReadRetry`` allows is asked again within a pass
    /// (`read-retries`); 0: never.
    public var readRetries: Int = 3
    /// Bodies larger than this fail with `.responseTooLarge`.
    public var maxResponseBytes: Int64 = 256 << 20
    /// A PEM bundle of trusted CAs; the system store when nil. Verification is never disabled.
    public var caFile: String?
    /// Schemes requests and redirects may use.
    public var allowedProtocols: Set<String> = ["http", "https"]
    public var userAgent: String = "ferry/\(FerryVersion.current)"
    /// Bytes buffered for a slow owner before the transfer pauses (backpressure).
    public var bufferLimit: Int = 4 << 20
    /// Where requests get an `Authorization` header that expires (OAuth2); nil when the kind
    /// sets its own, fixed one or none.
    public var authorizer: SessionAuthorizer?

    public init() {}
}
