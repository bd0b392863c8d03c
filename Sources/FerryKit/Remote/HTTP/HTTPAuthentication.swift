import Foundation

/// How a store's requests authenticate, for kinds that use a standard HTTP scheme.
public enum HTTPAuthentication: Sendable, Equatable {
    case none
    /// RFC 7617: `username =` and the `password` secret.
    case basic(username: String, password: Secret)
    /// RFC 6750: the `bearer-token` secret.
    case bearer(Secret)

    /// The `Authorization` value, or nil for `.none`. It carries the secret: it goes into a
    /// request's headers and nowhere else.
    var authorization: String? {
        switch self {
        case .none: nil
        case .basic(let username, let password): "Basic " + Data("\(username):\(password.value)".utf8).base64EncodedString()
        case .bearer(let token): "Bearer " + token.value
        }
    }

    /// The secrets it sends.
    var secrets: [Secret] {
        switch self {
        case .none: []
        case .basic(_, let password): [password]
        case .bearer(let token): [token]
        }
    }
}
