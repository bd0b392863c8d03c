import Foundation

/// Supplies the `Authorization` header of a session's requests when it is not a fixed value
/// but a credential that expires and has to be fetched: an OAuth2 access token.
///
/// A ``RemoteSession`` whose configuration carries one asks it before every request, waits
/// (without blocking its run loop) while it fetches a value, and sends a request again, once,
/// with a new value when the server answered 401 to the one it sent: the owner of the session
/// never sees that first 401, nor needs to know the credential expires.
public protocol RequestAuthorizer: AnyObject, Sendable {
    /// The value to send now, if one is held and not about to expire; nil when it has to be
    /// fetched first (``authorize(rejecting:on:completion:)``). Cheap: called for every request.
    func currentAuthorization() -> String?

    /// Gets a value, fetching one if need be, and calls `completion` with it on `loop`, never
    /// inside this call. `rejected` is a value a server just answered 401 to: it is not handed
    /// out again. A failure is a ``TransferError``: of the token request's own transfer, or
    /// ``TransferError/Kind/credentialsRefused`` when the credential itself was refused.
    func authorize(rejecting rejected: String?, on loop: RunLoopHandle,
                   completion: @escaping (Result<String, TransferError>) -> Void)
}

/// A ``RequestAuthorizer`` in a ``SessionConfiguration``: equal when it is the same object, so
/// two configurations sharing one authorizer (a store before and after a reload that kept its
/// credentials) compare equal.
public struct SessionAuthorizer: Sendable, Equatable {
    public let base: any RequestAuthorizer

    public init(_ base: any RequestAuthorizer) {
        self.base = base
    }

    public static func == (lhs: SessionAuthorizer, rhs: SessionAuthorizer) -> Bool {
        lhs.base === rhs.base
    }
}
