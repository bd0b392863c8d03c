import Foundation

/// Why a sync pass failed, with what an admin needs to act: the store, the URL (never with
/// credentials) and the position in the response.
///
/// Pattern-match on ``kind``; ``isRetryable`` and ``retryAfter`` drive the scheduler's backoff.
public struct SyncError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The transfer failed (timeout, reset, TLS, DNS...).
        case transport(TransferError.Kind)
        /// The server answered with a status the kind cannot use.
        case httpStatus(Int)
        /// The server is rate limiting (429, or 503 with Retry-After, or a rate-limit header at 0).
        case rateLimited
        /// The server refused the credentials: a configuration problem, not retried soon.
        case unauthorized
        /// The response could not be parsed (malformed JSON or XML, an HTML page with 200,
        /// wrong types, a missing field).
        case malformedResponse
        /// A record failed and the store's policy is to fail the pass.
        case badRecord
        /// A protocol-level answer the kind knows (a Parse error code, a DAV precondition).
        case remote(code: String)
        /// The local database failed (full disk, read-only, locked).
        case store
        /// The configuration does not work against this remote.
        case configuration
        case cancelled
    }

    public var kind: Kind
    /// The store's configured name.
    public var store: String
    /// The URL involved, without credentials (empty when none).
    public var url: String
    /// Where in the response: "record 17", "byte 4096", "page 3"... (empty when not applicable).
    public var position: String
    public var message: String
    /// How long the server asked us to wait, from Retry-After or a rate-limit reset header.
    public var retryAfter: Duration?

    public init(_ kind: Kind, store: String, url: String = "", position: String = "", message: String, retryAfter: Duration? = nil) {
        self.kind = kind
        self.store = store
        self.url = url.redactingUserInfo
        self.position = position
        self.message = message
        self.retryAfter = retryAfter
    }

    /// Whether a later pass may succeed without anyone changing anything.
    public var isRetryable: Bool {
        switch kind {
        case .transport(let transport): TransferError(kind: transport, url: "", detail: "").isTransient
        case .httpStatus(let status): status >= 500 || status == 408
        case .rateLimited, .malformedResponse, .remote, .store: true
        case .unauthorized, .badRecord, .configuration, .cancelled: false
        }
    }

    public var description: String {
        var text = "store \(store): \(message)"
        if !url.isEmpty { text += " (\(url)" + (position.isEmpty ? ")" : ", \(position))") }
        return text
    }
}

extension SyncError.Kind {
    /// Lets `catch SyncError.Kind.unauthorized` match a thrown ``SyncError``.
    public static func ~= (pattern: SyncError.Kind, value: any Error) -> Bool {
        (value as? SyncError)?.kind == pattern
    }
}
