import Foundation

/// When a read that failed is asked again within the pass, as every well-behaved client of
/// these APIs does (rclone's low-level retries; Google's, Stripe's and HubSpot's guidance to
/// back off and retry): a one-shot `ferry sync` should not fail, nor a pass wait out its
/// schedule's backoff, for one 503 or one reset connection.
///
/// Only requests that read (GET, and POSTs that only read: ``HTTPRequest/readsOnly``) are
/// asked again; a write whose answer was lost is the push's to settle. A decision is a pure
/// function of what went wrong and how often, so its tests read as the table:
///
/// | what went wrong                                    | asked again after                    |
/// |----------------------------------------------------|--------------------------------------|
/// | 500, 502, 503, 504, 408                             | the backoff, or the wait the server names |
/// | 429, or a 403 that is a rate limit                  | the wait the server names (at most ``longestWait``), else the backoff |
/// | a reset, refused or cut-off connection, a stall, a timeout | the backoff                  |
/// | a wait named longer than ``longestWait``           | never: the pass fails with that wait |
/// | anything else (401, 404, a TLS or DNS failure...)  | never                                |
/// | the ``maxRetries``-th retry failed too             | never                                |
///
/// The backoff doubles from ``firstDelay``: 1, 2, 4 s by default, at most 7 s of waiting for
/// one request.
struct ReadRetry: Sendable, Equatable {
    var maxRetries = 3
    var firstDelay: Duration = .seconds(1)
    /// The longest wait a server may name for its request to be asked again within the pass;
    /// past it the pass fails as rate limited, and its scheduler (or `ferry sync`, saying so)
    /// waits.
    var longestWait: Duration = .seconds(10)

    /// No retries (requests that write, token endpoints).
    static let never = ReadRetry(maxRetries: 0)

    enum Decision: Sendable, Equatable {
        case retry(after: Duration, because: String)
        case giveUp
    }

    /// What went wrong with one attempt.
    enum Failure: Sendable {
        case status(Int, headers: HTTPHeaders, body: Data)
        case transfer(TransferError.Kind)
    }

    /// Whether, and after how long, to ask again after `retries` retries already made.
    func decide(after failure: Failure, retries: Int, now: Date = Date()) -> Decision {
        guard retries < maxRetries else { return .giveUp }
        let backoff = firstDelay * (1 << min(retries, 16))
        switch failure {
        case .transfer(let kind):
            switch kind {
            case .connection, .truncated, .stalled, .connectTimeout, .totalTimeout:
                return .retry(after: backoff, because: Self.describe(kind))
            case .tooManyRedirects, .responseTooLarge, .tls, .nameResolution, .protocolNotAllowed, .insecureRedirect, .invalidURL,
                 .fileNotReadable, .credentialsRefused, .tokenEndpoint, .other:
                return .giveUp
            }
        case .status(let status, let headers, let body):
            let named = HTTPStatusClassifier.retryAfter(headers, now: now)
            let limited = status == 429 || (status == 403 && (HTTPStatusClassifier.isRateLimitExhausted(headers)
                                                            || headers["Retry-After"] != nil || HTTPStatusClassifier.namesRateLimit(body)))
            guard limited || [408, 500, 502, 503, 504].contains(status) else { return .giveUp }
            if let named, named > longestWait { return .giveUp }
            return .retry(after: max(backoff, named ?? .zero), because: limited ? "rate limited (HTTP \(status))" : "HTTP \(status)")
        }
    }

    private static func describe(_ kind: TransferError.Kind) -> String {
        switch kind {
        case .connection: "the connection failed"
        case .truncated: "the answer was cut off"
        case .stalled: "the transfer stalled"
        case .connectTimeout: "connecting timed out"
        case .totalTimeout: "the request timed out"
        default: "\(kind)"
        }
    }
}
