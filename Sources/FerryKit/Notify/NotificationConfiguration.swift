/// How a store's change notifications are told from forgeries (`notify =` and its keys).
///
/// A notification is a trigger, never data: a verified one makes the store due at once, and
/// the pass reads the remote as always. So the scheme only has to answer "did the API send
/// this?", the way each API documents it.
public enum NotificationScheme: String, Sendable, CaseIterable, Equatable {
    /// `Stripe-Signature: t=TIMESTAMP,v1=HEX`: hex HMAC-SHA256 of "TIMESTAMP.BODY".
    case stripe
    /// `X-Hub-Signature-256: sha256=HEX`: hex HMAC-SHA256 of the body.
    case github
    /// `X-Shopify-Hmac-Sha256: BASE64`: base64 HMAC-SHA256 of the body.
    case shopify
    /// `X-HubSpot-Signature-v3: BASE64` with `X-HubSpot-Request-Timestamp` (milliseconds):
    /// base64 HMAC-SHA256 of method + URI + body + timestamp; without it, the older
    /// `X-HubSpot-Signature: HEX` by `X-HubSpot-Signature-Version` (v1: SHA-256 of secret +
    /// body; v2: of secret + method + URI + body).
    case hubspot
    /// Microsoft Graph change notifications: a `validationToken` handshake echoed back, then
    /// notifications whose every `clientState` is the store's secret.
    case graph
    /// Google push channels: `X-Goog-Channel-Token` is the store's secret; the resource state
    /// `sync` is the handshake that opens a channel.
    case google
    /// Any API that signs its body with HMAC-SHA256 in a header of its own (`notify-header`),
    /// as hex or base64, with or without a `sha256=` prefix.
    case hmacSHA256 = "hmac-sha256"

    /// Whether the scheme signs with a timestamp that ages (the others cannot refuse a replay).
    public var isTimestamped: Bool { self == .stripe || self == .hubspot }
}

/// A store's `notify*` keys, validated.
public struct NotificationConfiguration: Sendable, Equatable {
    public var scheme: NotificationScheme
    /// The HMAC key (Stripe's endpoint secret, GitHub's webhook secret, Shopify's and
    /// HubSpot's app secret), Graph's clientState, or Google's channel token.
    public var secret: Secret
    /// The signature header of `hmac-sha256` (`notify-header`); nil for the other schemes.
    public var header: String?
    /// How far a signed timestamp may be from now (`notify-tolerance`, 5 minutes as Stripe and
    /// HubSpot document it).
    public var tolerance: Duration = .seconds(300)
    /// The most `notify-tolerance` may be.
    static let longestTolerance = Duration.seconds(3600)

    public init(scheme: NotificationScheme, secret: Secret, header: String? = nil, tolerance: Duration = .seconds(300)) {
        self.scheme = scheme
        self.secret = secret
        self.header = header
        self.tolerance = tolerance
    }

    /// The keys a store takes for its notifications.
    static let keys: Set<String> = ["notify", "notify-secret", "notify-header", "notify-tolerance"]

    /// The path the listener takes `store`'s notifications at.
    public static func path(of store: String) -> String { "/notify/\(store)" }
}
