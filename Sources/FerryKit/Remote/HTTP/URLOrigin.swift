import Foundation

/// The origin of a URL (RFC 6454: scheme, host, port, with the scheme's default port filled in),
/// for the rule that credentials go only where the configuration sent them: a pagination link
/// to another origin is followed without them.
struct URLOrigin: Equatable, CustomStringConvertible {
    let scheme: String
    let host: String
    let port: Int

    init?(_ url: String) {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
              let host = components.host?.lowercased(), !host.isEmpty else { return nil }
        let port = components.port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : -1)
        self.scheme = scheme
        self.host = host
        self.port = port
    }

    /// `scheme://host`, with `:port` when it is not the scheme's default.
    var description: String {
        let standard = (scheme == "https" && port == 443) || (scheme == "http" && port == 80)
        return "\(scheme)://\(host)" + (standard ? "" : ":\(port)")
    }

    /// Whether a request to `other` may carry credentials meant for `self`: the same origin,
    /// or the same host upgraded from http to https on the default ports (no downgrade, no
    /// other host, no other port).
    func trusts(_ other: URLOrigin) -> Bool {
        if self == other { return true }
        return host == other.host && scheme == "http" && port == 80 && other.scheme == "https" && other.port == 443
    }
}
