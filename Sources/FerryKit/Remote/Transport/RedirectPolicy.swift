import Foundation

/// What a ``RemoteSession`` does with a response that may be a redirect: hand it to the owner,
/// send the request again where it points, or fail the transfer.
///
/// The session follows redirects itself rather than letting libcurl do it, because libcurl
/// would drop the body of a REPORT or PROPFIND redirected by a 301 or 302 (and the server then
/// answers "missing request body"), and would send a store's own credential headers, an API
/// key in `X-Api-Key` say, to whatever host the redirect names.
///
/// | Status | Method and body on the next request | Credentials |
/// |---|---|---|
/// | 301, 302, 307, 308 | kept, whatever the method | kept while the target's origin is one the first URL's trusts (``URLOrigin/trusts(_:)``), dropped for good from the first hop that is not |
/// | 303 | `GET` (a `HEAD` stays `HEAD`), no body, no body or condition headers | as above |
/// | other | the response is the answer | |
///
/// RFC 9110 lets a client turn a redirected POST into a GET on 301 and 302; browsers do, for
/// forms. A sync client means the request it sent (a REPORT, a PUT of a record), so it keeps
/// it. A redirect from https to http is refused: it would send the request, and the record in
/// it, in clear. A redirect without a Location, or with a maximum of 0, is handed over as the
/// answer it is.
struct RedirectPolicy: Sendable, Equatable {
    var maxRedirects: Int
    var allowedProtocols: Set<String>

    init(maxRedirects: Int, allowedProtocols: Set<String>) {
        self.maxRedirects = maxRedirects
        self.allowedProtocols = allowedProtocols
    }

    init(_ configuration: SessionConfiguration) {
        self.init(maxRedirects: configuration.maxRedirects, allowedProtocols: configuration.allowedProtocols)
    }

    /// Where a chain of redirects stands: the first request's URL (whose origin credentials
    /// belong to), redirects followed so far, whether all were permanent, and whether
    /// credentials were already dropped.
    struct Chain: Sendable, Equatable {
        var firstURL: String
        var redirects = 0
        var allPermanent = true
        var credentialsWithheld = false

        init(firstURL: String) {
            self.firstURL = firstURL
        }
    }

    enum Decision: Sendable, Equatable {
        /// The response is the answer.
        case deliver
        /// Send `request`; `chain` is where the chain then stands.
        case follow(HTTPRequest, chain: Chain)
        /// The redirect cannot be followed.
        case refuse(TransferError.Kind, detail: String)
    }

    static let redirectStatuses: Set<Int> = [301, 302, 303, 307, 308]

    /// Headers that describe a body or make a request conditional: meaningless on the GET a
    /// 303 asks for.
    private static let bodyAndConditionHeaders = [
        "Content-Type", "Content-Length", "Content-Encoding", "Depth",
        "If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since",
    ]

    /// What to do after `request`, the chain's latest, was answered with `status` and
    /// `location` (the Location header).
    func decide(status: Int, location: String?, after request: HTTPRequest, chain: Chain) -> Decision {
        guard Self.redirectStatuses.contains(status), maxRedirects > 0,
              let location = location?.trimmingCharacters(in: .whitespaces), !location.isEmpty else { return .deliver }
        guard let base = URL(string: request.url), let resolved = URL(string: location, relativeTo: base)?.absoluteURL,
              let scheme = resolved.scheme?.lowercased() else {
            return .refuse(.invalidURL, detail: "the server redirected (\(status)) to something that is not a URL")
        }
        guard allowedProtocols.contains(scheme) else {
            return .refuse(.protocolNotAllowed, detail: "the server redirected (\(status)) to a \(scheme): URL, which is not allowed")
        }
        if request.url.lowercased().hasPrefix("https:"), scheme == "http" {
            return .refuse(.insecureRedirect, detail: "the server redirected (\(status)) from https to http, which would send the request in clear")
        }
        guard chain.redirects < maxRedirects else {
            return .refuse(.tooManyRedirects, detail: "more than \(maxRedirects) redirects")
        }

        var next = request
        next.url = resolved.absoluteString
        if status == 303, request.method != "HEAD" {
            next.method = "GET"
            next.body = nil
            for name in Self.bodyAndConditionHeaders { next.headers.remove(name) }
        }
        var chain = chain
        chain.redirects += 1
        chain.allPermanent = chain.allPermanent && (status == 301 || status == 308)
        if !chain.credentialsWithheld, !Self.mayCarryCredentials(from: chain.firstURL, to: next.url) {
            chain.credentialsWithheld = true
        }
        if chain.credentialsWithheld {
            next.headers = next.headers.removingCredentials()
        }
        return .follow(next, chain: chain)
    }

    private static func mayCarryCredentials(from first: String, to target: String) -> Bool {
        guard let home = URLOrigin(first), let other = URLOrigin(target) else { return false }
        return home.trusts(other)
    }
}
