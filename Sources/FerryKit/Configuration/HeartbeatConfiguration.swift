import Foundation

/// A dead-man's switch to ping (`heartbeat-url =`, `heartbeat-interval =`), in the style of
/// healthchecks.io: the URL on success, the URL + `/fail` on failure, at most every interval
/// while nothing changes and at once when health changes.
///
/// The URL names the check it pings, so it is treated as a secret: it may be written inline
/// (`https://hc-ping.com/UUID`) or by reference (`credential:NAME`, `file:/path`, holding the
/// URL), and only its origin (``target``) ever reaches a log.
public struct HeartbeatConfiguration: Sendable, Equatable {
    public var url: Secret
    public var interval: Duration
    /// `scheme://host[:port]`: where pings go, for logs.
    public var target: String

    public static let defaultInterval: Duration = .seconds(60)

    public init(url: Secret, interval: Duration = Self.defaultInterval) {
        self.url = url
        self.interval = interval
        target = URLOrigin(url.value).map(\.description) ?? "(unparsed URL)"
    }

    static let keys: Set<String> = ["heartbeat-url", "heartbeat-interval"]
}

extension ConfigurationValueReader {
    /// The heartbeat of one section from its `heartbeat-url` and `heartbeat-interval` lines:
    /// nil without a URL (an interval alone is a problem), or when a line has a problem.
    mutating func heartbeat(url: ConfigurationSyntax.Entry?, interval: ConfigurationSyntax.Entry?,
                            secrets: SecretResolver) -> HeartbeatConfiguration? {
        guard let url else {
            if let interval { problem(interval, "heartbeat-interval needs a heartbeat-url in the same section") }
            return nil
        }
        let every: Duration
        if let interval {
            guard let value = duration(interval) else { return nil }
            every = value
        } else {
            every = HeartbeatConfiguration.defaultInterval
        }
        let secret: Secret
        if url.value.hasPrefix("http://") || url.value.hasPrefix("https://") {
            secret = Secret(url.value, source: "heartbeat-url")
        } else if let scheme = URLComponents(string: url.value)?.scheme, url.value.contains("://") {
            // A URL of another scheme is no secret reference gone wrong: say what is wrong with it.
            problem(url, "scheme \(scheme) is not allowed: a heartbeat is an http or https URL (or credential:NAME or file:/path holding one)")
            return nil
        } else {
            switch secrets.resolve(url.value) {
            case .success(let value):
                secret = Secret(value.value.trimmingCharacters(in: .whitespacesAndNewlines), source: value.source)
            case .failure(let failure):
                problem(url, "expected an http(s) URL, credential:NAME or file:/path holding one: \(failure.message)")
                return nil
            }
        }
        // References not read (`ferry status`) have nothing to check.
        if !secret.value.isEmpty {
            guard let parsed = URLComponents(string: secret.value), let scheme = parsed.scheme?.lowercased(),
                  scheme == "http" || scheme == "https", parsed.host?.isEmpty == false else {
                problem(url, "the heartbeat URL (from \(secret.source)) is not an absolute http or https URL")
                return nil
            }
        }
        return HeartbeatConfiguration(url: secret, interval: every)
    }
}
