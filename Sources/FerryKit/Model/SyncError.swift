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
        /// The local database failed: a full disk, a read-only file system, a lock held too
        /// long... (`catch SyncError.Kind.store(.full)`).
        case store(StoreError.Kind)
        /// The configuration does not work against this remote.
        case configuration
        /// Another process is syncing the store (ferryd, `ferry sync`, `ferry push`): this pass
        /// did nothing, and a later one will (``ReplicaDatabase/claimPass(of:token:at:)``).
        case busy
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
    /// When the pass failed, if the replica could not record the failure (its disk full or
    /// read-only); nil when it holds it, or the failure was never meant for it.
    public var unrecordedAt: Date?

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
        // 423 Locked: a WebDAV lock someone holds for now (Xandikos answers it to two writes
        // racing for its repository).
        case .httpStatus(let status): status >= 500 || status == 408 || status == 423
        case .store(let store): store.isTransient
        case .rateLimited, .malformedResponse, .remote, .busy: true
        case .unauthorized, .badRecord, .configuration, .cancelled: false
        }
    }

    /// One line for people: the store, the message, a shortened URL (the whole URL is in
    /// ``url``, which the journal keeps in a field of its own) and the position.
    public var description: String {
        var text = "store \(store): \(message)"
        // The replica's failure is not the remote's: its URL (kept in ``url`` for the journal)
        // would only send a person looking at the remote.
        if case .store = kind { return text }
        if !url.isEmpty { text += " (\(url.shortenedForDisplay)" + (position.isEmpty ? ")" : ", \(position))") }
        return text
    }
}

extension SyncError {
    /// The error with every occurrence of `secrets` replaced, in its URL, position and message:
    /// what a pass applies before anything records or logs an error, so no configured secret
    /// reaches status, the journal or an exit message even when a server echoes it or a URL
    /// carries it.
    public func redacting(_ secrets: [Secret]) -> SyncError {
        // Tokens fetched at run time as well (an OAuth2 access token a server quoted back).
        let values = secrets.map(\.value) + RuntimeSecrets.values
        var redacted = self
        redacted.url = url.redacting(values)
        redacted.position = position.redacting(values)
        redacted.message = message.redacting(values)
        return redacted
    }

    /// A replica failure during a pass, keeping its kind (`.store(.full)`) and its words.
    public init(_ error: StoreError, store: String, url: String = "") {
        // A record the policy refuses is the record's fault, not the replica's.
        // The store is named once, by the pass's error.
        var unnamed = error
        if unnamed.store == store { unnamed.store = nil }
        self.init(error.kind == .badRecord ? .badRecord : .store(error.kind), store: store, url: url, message: unnamed.description)
    }
}

extension String {
    /// A URL short enough to read in one line: scheme, host and path kept (the path's middle
    /// elided past 80 characters), a long query cut with "…". Errors use it; logs keep the URL.
    var shortenedForDisplay: String {
        guard utf8.count > 120 else { return self }
        let query = firstIndex(of: "?")
        var base = String(self[..<(query ?? endIndex)])
        if base.count > 100 { base = String(base.prefix(60)) + "…" + String(base.suffix(39)) }
        guard let query else { return base }
        let rest = self[index(after: query)...]
        let room = max(0, 119 - base.count)
        return base + "?" + (rest.count > room ? String(rest.prefix(room)) + "…" : String(rest))
    }
}

extension SyncError.Kind {
    /// Lets `catch SyncError.Kind.unauthorized` match a thrown ``SyncError``.
    public static func ~= (pattern: SyncError.Kind, value: any Error) -> Bool {
        (value as? SyncError)?.kind == pattern
    }
}
