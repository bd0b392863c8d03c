/// A header or query parameter a store's configuration adds to every request: plain text, or
/// a secret by reference whose value stays inside the request.
public struct ConfiguredField: Sendable, Equatable {
    public enum Value: Sendable, Equatable {
        case text(String)
        case secret(Secret)

        var value: String {
            switch self {
            case .text(let text): text
            case .secret(let secret): secret.value
            }
        }
    }

    public var name: String
    public var value: Value

    public init(name: String, value: Value) {
        self.name = name
        self.value = value
    }

    /// The secret it carries, if any.
    var secret: Secret? {
        if case .secret(let secret) = value { secret } else { nil }
    }

    /// Names that carry credentials by convention: a plain value for one of them is an inline
    /// secret, which the configuration refuses.
    static func looksLikeCredential(_ name: String) -> Bool {
        let lowered = name.lowercased()
        return ["auth", "key", "token", "secret", "password", "passwd", "cookie", "session", "signature", "sig"].contains { lowered.contains($0) }
    }
}

/// Extra request headers from a store's `header.NAME = VALUE` lines, sent with every request of
/// the store: plain text (`header.Accept = application/vnd.github+json`) or a secret by
/// reference (`header.X-Api-Key = credential:api-key`).
public struct ConfiguredHeaders: Sendable, Equatable {
    public typealias Field = ConfiguredField

    public var fields: [Field] = []

    public init(_ fields: [Field] = []) {
        self.fields = fields
    }

    public var isEmpty: Bool { fields.isEmpty }

    /// The secrets the headers carry.
    var secrets: [Secret] { fields.compactMap(\.secret) }

    /// Sets every configured field on `headers`, replacing what a kind put there (an admin's
    /// `Accept` wins over the kind's default).
    func apply(to headers: inout HTTPHeaders) {
        for field in fields {
            switch field.value {
            case .text(let text): headers.set(field.name, text)
            case .secret(let secret): headers.setCredential(field.name, secret.value)
            }
        }
    }

    /// Headers Ferry sets itself, per request, from what the request means: configuring them
    /// would break the protocol, so they are refused.
    static let reserved: Set<String> = [
        "host", "content-length", "transfer-encoding", "connection", "expect", "content-type", "depth",
        "if-match", "if-none-match", "if-modified-since", "if-unmodified-since",
    ]

    /// Whether `name` is an HTTP field name (RFC 9110 token).
    static func isFieldName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                true
            default:
                "!#$%&'*+-.^_`|~".utf8.contains(byte)
            }
        }
    }
}
