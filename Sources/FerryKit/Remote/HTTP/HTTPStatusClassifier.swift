import Foundation

/// What an HTTP answer a kind cannot use means, decided the same way for every kind, so the
/// same failure has the same kind, backoff, `ferry status` cause and exit code whatever the
/// remote speaks. Kinds first claim the answers only they understand (a Parse error code, a
/// DAV precondition), then ask here.
///
/// | answer                                             | kind                          |
/// |----------------------------------------------------|-------------------------------|
/// | 429; or 403 with `X-RateLimit-Remaining: 0`,        | `.rateLimited` (retry after)  |
/// | `Retry-After`, or a body naming a rate limit       |                               |
/// | 401 after a redirect to another origin             | `.unauthorized` (withheld)    |
/// | 401 with credentials configured                    | `.unauthorized` (refused)     |
/// | 401 without credentials                            | `.unauthorized` (needed)      |
/// | 403                                                | `.unauthorized` (no access)   |
/// | 404, 410 on the configured URL                     | `.configuration`              |
/// | 5xx, 408 (503 alike with or without Retry-After)   | `.httpStatus`, retried        |
/// | anything else                                      | `.httpStatus`                 |
///
/// `Retry-After` (seconds or an HTTP date) and `X-RateLimit-Reset` or `RateLimit-Reset` (epoch
/// seconds, or seconds from now when smaller than an epoch; read when the remaining count is
/// 0) become ``SyncError/retryAfter`` on every answer that carries them. APIs that refuse an
/// over-eager client with 403 say so in their body (Google's `rateLimitExceeded`, Salesforce's
/// `REQUEST_LIMIT_EXCEEDED`, GitHub's secondary rate limit): such a 403 is a rate limit to wait
/// out, not a refusal to fix by configuration.
enum HTTPStatusClassifier {
    /// Who asked, for the error's words.
    struct Context: Sendable {
        var store: String
        /// Whether the store sends credentials (a 401 then means refused, not missing).
        var credentialsConfigured: Bool
        /// Values that must never appear in an error, even if a server echoes them.
        var secrets: [String]
        /// Where the credentials were read from (``Secret/source``: "credential dav-pass",
        /// "file /etc/ferry/key"), never what they hold: a refusal names what to check.
        var credentialSources: [String]

        init(store: String, credentialsConfigured: Bool, secrets: [String] = [], credentialSources: [String] = []) {
            self.store = store
            self.credentialsConfigured = credentialsConfigured
            self.secrets = secrets
            self.credentialSources = credentialSources
        }

        /// The context of `store`'s requests: its kind's credentials and its secret headers.
        init(_ store: StoreConfiguration) {
            let secrets = store.secrets
            var sources: [String] = []
            for secret in secrets where !sources.contains(secret.source) { sources.append(secret.source) }
            self.init(store: store.name, credentialsConfigured: !secrets.isEmpty || store.oauth2 != nil, secrets: secrets.map(\.value),
                      credentialSources: sources)
        }
    }

    /// Whether the request was for the URL the configuration names (a collection, a class, a
    /// first page), where a 404 means the configuration is wrong rather than the remote broken.
    enum Target: Sendable {
        case configuredURL
        case derivedURL
    }

    /// When the server asked to be tried again, in words: "; the server asks to retry in 2 s".
    private static func retryHint(_ wait: Duration?) -> String {
        wait.map { "; the server asks to retry in \(ConfigurationUnits.format($0))" } ?? ""
    }

    /// The error for a non-2xx answer: `head`'s status and headers, at `head.url`.
    static func error(_ head: ResponseHead, body: Data, target: Target, position: String = "", context: Context) -> SyncError {
        error(status: head.status, headers: head.headers, body: body, url: head.url, target: target, position: position,
              context: context, credentialsWithheld: head.credentialsWithheld)
    }

    /// The error for a non-2xx answer. `credentialsWithheld`: a redirect led to an origin the
    /// store's credentials were not sent to.
    static func error(status: Int, headers: HTTPHeaders, body: Data, url: String, target: Target, position: String = "",
                      context: Context, credentialsWithheld: Bool = false, now: Date = Date()) -> SyncError {
        let wait = retryAfter(headers, now: now)
        let detail = ErrorBodySnippet.summary(of: body, contentType: headers["Content-Type"], redacting: context.secrets)
        let said = detail.map { ": \($0)" } ?? ""
        func make(_ kind: SyncError.Kind, _ message: String) -> SyncError {
            SyncError(kind, store: context.store, url: url, position: position, message: message, retryAfter: wait)
        }
        switch status {
        case 429:
            return make(.rateLimited, "rate limited (HTTP 429)\(said)\(retryHint(wait))")
        case 403 where isRateLimitExhausted(headers):
            return make(.rateLimited, "rate limit exhausted (HTTP 403, RateLimit-Remaining: 0)\(said)\(retryHint(wait))")
        case 403 where headers["Retry-After"] != nil || namesRateLimit(body):
            return make(.rateLimited, "rate limited (HTTP 403)\(said)\(retryHint(wait))")
        case 401 where context.credentialsConfigured && credentialsWithheld:
            return make(.unauthorized, "the remote asks for credentials (HTTP 401) at the URL a redirect led to; it is on another origin, so the store's credentials were not sent (set url = to it if it is the same service)")
        case 401 where context.credentialsConfigured:
            let sources = context.credentialSources.isEmpty ? ""
                : "; they were read from \(context.credentialSources.joined(separator: ", ")): check that secret, and username = where the store sets one"
            return make(.unauthorized, "the remote refused the credentials (HTTP 401)\(said)\(sources)")
        case 401:
            return make(.unauthorized, "the remote asks for credentials (HTTP 401) and the store configures none (add username and password, bearer-token or a key)")
        case 403:
            return make(.unauthorized, "the remote refused access (HTTP 403)\(said)")
        case 404 where target == .configuredURL, 410 where target == .configuredURL:
            return make(.configuration, "nothing at the configured url (HTTP \(status)); check url = in the store's section\(said)")
        default:
            return make(.httpStatus(status), "HTTP \(status)\(said)")
        }
    }

    /// How long the server asked us to wait: `Retry-After` (seconds or an HTTP date), or a
    /// remaining count of 0 with `X-RateLimit-Reset` / `RateLimit-Reset`: epoch seconds
    /// (GitHub, GitLab), or seconds from now when the value is too small to be an epoch (the
    /// IETF draft's form). A reset in another form (Jira's timestamp) gives no wait.
    static func retryAfter(_ headers: HTTPHeaders, now: Date = Date()) -> Duration? {
        if let value = headers["Retry-After"]?.trimmingCharacters(in: .whitespaces) {
            if let seconds = Double(value), seconds >= 0, seconds.isFinite { return .milliseconds(Int64(min(seconds, 86_400 * 365) * 1000)) }
            if let date = httpDate(value) { return .milliseconds(Int64(max(0, date.timeIntervalSince(now)) * 1000)) }
        }
        if isRateLimitExhausted(headers),
           let reset = (headers["X-RateLimit-Reset"] ?? headers["RateLimit-Reset"]).flatMap({ Double($0.trimmingCharacters(in: .whitespaces)) }),
           reset.isFinite, reset >= 0 {
            let seconds = reset >= 1_000_000_000 ? reset - now.timeIntervalSince1970 : reset
            return .milliseconds(Int64(max(0, min(seconds, 86_400 * 365)) * 1000))
        }
        return nil
    }

    /// A remaining count of 0 (`X-RateLimit-Remaining`: GitHub and many others;
    /// `RateLimit-Remaining`: GitLab and the IETF draft): the next request will be refused.
    static func isRateLimitExhausted(_ headers: HTTPHeaders) -> Bool {
        (headers["X-RateLimit-Remaining"] ?? headers["RateLimit-Remaining"])?.trimmingCharacters(in: .whitespaces) == "0"
    }

    /// Whether an error body names a rate or request limit, in the words APIs use for it:
    /// `rateLimitExceeded`, `rate_limit`, "API rate limit exceeded", `RATE_LIMITED`,
    /// `REQUEST_LIMIT_EXCEEDED`, `dailyLimitExceeded`, "Too Many Requests". Letters only,
    /// lowercased, so every spelling of each reads the same; a storage quota or a permission
    /// does not match.
    static func namesRateLimit(_ body: Data) -> Bool {
        guard !body.isEmpty else { return false }
        let letters = String(decoding: body.prefix(4096), as: UTF8.self).lowercased().filter { $0.isLetter }
        return rateLimitWords.contains { letters.contains($0) }
    }

    private static let rateLimitWords = ["ratelimit", "requestlimitexceeded", "dailylimitexceeded", "toomanyrequests"]

    /// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the form RFC 9110 requires senders to use.
    static func httpDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: text)
    }
}

extension SyncError {
    /// A transfer that failed before any usable answer (DNS, TLS, reset, timeout...), with the
    /// setting to change when one is to blame.
    init(_ transfer: TransferError, store: StoreConfiguration, position: String = "") {
        let message = switch transfer.kind {
        case .responseTooLarge:
            "the response is larger than max-response-size (\(ConfigurationUnits.formatSize(store.session.maxResponseBytes))); raise it in the store's section if the remote really sends that much"
        case .totalTimeout:
            "the request took longer than total-timeout (\(Int(store.session.totalTimeout)) s): \(transfer.detail)"
        case .stalled:
            "the transfer stalled (slower than low-speed-limit for low-speed-time): \(transfer.detail)"
        case .credentialsRefused, .tokenEndpoint:
            transfer.detail
        default:
            "transfer failed: \(transfer.kind): \(transfer.detail)"
        }
        // Someone has to authorise again: the same kind, exit status and STATUS= as a 401.
        let kind: SyncError.Kind = transfer.kind == .credentialsRefused ? .unauthorized : .transport(transfer.kind)
        self.init(kind, store: store.name, url: transfer.url, position: position, message: message)
    }
}
