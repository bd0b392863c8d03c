import Foundation

/// Where ferryd serves its Prometheus metrics: `metrics-listen = ADDRESS:PORT` in `[ferry]`,
/// an IP address (IPv6 in brackets) and a port, e.g. `127.0.0.1:9466` or `[::1]:9466`.
///
/// Only literal addresses: a host name would make the listener depend on name resolution at
/// start, and an address that resolves differently later would surprise whoever firewalled
/// it. Loopback is what the shipped unit expects (a local Prometheus, or a reverse proxy that
/// adds TLS and authentication); any other address is accepted, with a warning at load time,
/// because the metrics name the stores.
public struct MetricsEndpoint: Sendable, Equatable, CustomStringConvertible {
    public enum Family: Sendable, Equatable {
        case ipv4
        case ipv6
    }

    public let family: Family
    /// The address as written, without brackets.
    public let address: String
    public let port: UInt16

    /// Parses `ADDRESS:PORT`; nil with the reason when it is not one.
    public static func parse(_ text: String) -> Result<MetricsEndpoint, ParseFailure> {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let host: Substring
        let portText: Substring
        if trimmed.hasPrefix("[") {
            guard let close = trimmed.firstIndex(of: "]"), trimmed[trimmed.index(after: close)...].hasPrefix(":") else {
                return .failure(ParseFailure("an IPv6 address goes in brackets with a port after them, e.g. [::1]:9466"))
            }
            host = trimmed[trimmed.index(after: trimmed.startIndex)..<close]
            portText = trimmed[trimmed.index(close, offsetBy: 2)...]
        } else {
            guard let colon = trimmed.lastIndex(of: ":") else {
                return .failure(ParseFailure("expected ADDRESS:PORT, e.g. 127.0.0.1:9466"))
            }
            host = trimmed[..<colon]
            portText = trimmed[trimmed.index(after: colon)...]
            if host.contains(":") {
                return .failure(ParseFailure("an IPv6 address goes in brackets, e.g. [::1]:9466"))
            }
        }
        guard let port = UInt16(portText), port > 0 else {
            return .failure(ParseFailure("\"\(portText)\" is not a port (1-65535)"))
        }
        let address = String(host)
        if Self.isIPv4(address) { return .success(MetricsEndpoint(family: .ipv4, address: address, port: port)) }
        if Self.isIPv6(address) { return .success(MetricsEndpoint(family: .ipv6, address: address, port: port)) }
        return .failure(ParseFailure("\"\(address)\" is not an IP address (host names are not resolved here: write 127.0.0.1 or [::1])"))
    }

    public struct ParseFailure: Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    /// Whether only this machine can connect.
    public var isLoopback: Bool {
        switch family {
        case .ipv4: address.hasPrefix("127.")
        case .ipv6: address == "::1"
        }
    }

    public var description: String {
        family == .ipv6 ? "[\(address)]:\(port)" : "\(address):\(port)"
    }

    static func isIPv4(_ text: String) -> Bool {
        var storage = in_addr()
        return inet_pton(AF_INET, text, &storage) == 1
    }

    static func isIPv6(_ text: String) -> Bool {
        var storage = in6_addr()
        return inet_pton(AF_INET6, text, &storage) == 1
    }
}
