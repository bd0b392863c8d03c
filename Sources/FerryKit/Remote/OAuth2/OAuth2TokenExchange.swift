import Foundation

/// The requests an OAuth2 client sends to a token endpoint and how their answers read
/// (RFC 6749 §4.4, §5, §6; RFC 8628 §3.1, §3.4, §3.5), as pure functions: no transfer here.
enum OAuth2TokenExchange {
    /// A successful token response (RFC 6749 §5.1).
    struct Token: Sendable, Equatable {
        var accessToken: String
        /// Seconds the access token lives, counted from when the answer arrived here (never
        /// from the server's clock, which may not agree with ours); nil when not said.
        var expiresIn: Double?
        /// A new refresh token: the server rotates them, and the old one may be dead already.
        var refreshToken: String?
    }

    /// A device authorization response (RFC 8628 §3.2).
    struct DeviceCode: Sendable, Equatable {
        var deviceCode: String
        var userCode: String
        var verificationURI: String
        var verificationURIComplete: String?
        var expiresIn: Double
        /// Seconds between polls; 5 when not said.
        var interval: Double
    }

    /// Why a token endpoint's answer is not a token.
    enum Failure: Error, Sendable, Equatable {
        /// An error response (RFC 6749 §5.2): `code` such as `invalid_grant`, with the server's
        /// description if any.
        case error(code: String, description: String?, status: Int)
        /// Not a token response: a status without an OAuth2 error, or a body that does not read.
        case unreadable(status: Int, detail: String)
    }

    /// Error codes that say the grant or the client itself is refused: trying again with the
    /// same credentials cannot work (RFC 6749 §5.2, RFC 8628 §3.5).
    static let refusals: Set<String> = [
        "invalid_grant", "invalid_client", "unauthorized_client", "unsupported_grant_type", "invalid_scope",
        "access_denied", "expired_token",
    ]

    // MARK: Requests

    /// The refresh-token grant (§6) or the client-credentials grant (§4.4).
    static func tokenRequest(_ grant: OAuth2Grant, refreshToken: String?) -> HTTPRequest {
        var fields: [(String, String)]
        switch grant.kind {
        case .refreshToken: fields = [("grant_type", "refresh_token"), ("refresh_token", refreshToken ?? "")]
        case .clientCredentials: fields = [("grant_type", "client_credentials")]
        }
        if let scope = grant.scope { fields.append(("scope", scope)) }
        return post(grant.tokenURL, fields, client: grant)
    }

    /// The device authorization request (RFC 8628 §3.1).
    static func deviceAuthorizationRequest(_ grant: OAuth2Grant, url: String) -> HTTPRequest {
        var fields: [(String, String)] = []
        if let scope = grant.scope { fields.append(("scope", scope)) }
        return post(url, fields, client: grant)
    }

    /// A device access token request (RFC 8628 §3.4).
    static func deviceTokenRequest(_ grant: OAuth2Grant, deviceCode: String) -> HTTPRequest {
        post(grant.tokenURL, [("grant_type", "urn:ietf:params:oauth:grant-type:device_code"), ("device_code", deviceCode)], client: grant)
    }

    /// A form POST with the client's authentication (§2.3.1): HTTP Basic over the
    /// form-encoded id and secret, or both in the body; a public client (no secret) sends its
    /// id in the body.
    private static func post(_ url: String, _ fields: [(String, String)], client grant: OAuth2Grant) -> HTTPRequest {
        var fields = fields
        var headers = HTTPHeaders()
        headers.set("Content-Type", "application/x-www-form-urlencoded")
        headers.set("Accept", "application/json")
        switch (grant.clientSecret, grant.clientAuthentication) {
        case (let secret?, .basic):
            let pair = formEncode(grant.clientID) + ":" + formEncode(secret.value)
            headers.set("Authorization", "Basic " + Data(pair.utf8).base64EncodedString())
        case (let secret?, .body):
            fields += [("client_id", grant.clientID), ("client_secret", secret.value)]
        case (nil, _):
            fields.append(("client_id", grant.clientID))
        }
        let body = fields.map { formEncode($0.0) + "=" + formEncode($0.1) }.joined(separator: "&")
        return HTTPRequest(method: "POST", url: url, headers: headers, body: Data(body.utf8))
    }

    /// `application/x-www-form-urlencoded` (RFC 6749 Appendix B): unreserved characters as
    /// they are, a space as `+`, every other byte of the UTF-8 as `%XX`.
    static func formEncode(_ text: String) -> String {
        var encoded = ""
        encoded.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: " "):
                encoded += "+"
            default:
                encoded += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return encoded
    }

    // MARK: Answers

    /// Reads a token endpoint's answer.
    static func token(status: Int, body: Data) -> Result<Token, Failure> {
        let object: [String: Any]
        switch read(status: status, body: body) {
        case .success(let value): object = value
        case .failure(let failure): return .failure(failure)
        }
        guard let access = object["access_token"] as? String, !access.isEmpty else {
            return .failure(.unreadable(status: status, detail: "the answer has no access_token"))
        }
        guard let type = object["token_type"] as? String else {
            return .failure(.unreadable(status: status, detail: "the answer has no token_type"))
        }
        // RFC 6749 §5.1: case-insensitive; Ferry sends only bearer tokens (RFC 6750).
        guard type.lowercased() == "bearer" else {
            return .failure(.unreadable(status: status, detail: "the token is of type \(type.debugDescription), and only bearer tokens can be sent"))
        }
        var token = Token(accessToken: access)
        token.expiresIn = seconds(object["expires_in"])
        if let refresh = object["refresh_token"] as? String, !refresh.isEmpty { token.refreshToken = refresh }
        return .success(token)
    }

    /// Reads a device authorization endpoint's answer.
    static func deviceCode(status: Int, body: Data) -> Result<DeviceCode, Failure> {
        let object: [String: Any]
        switch read(status: status, body: body) {
        case .success(let value): object = value
        case .failure(let failure): return .failure(failure)
        }
        guard let device = object["device_code"] as? String, let user = object["user_code"] as? String,
              let uri = (object["verification_uri"] ?? object["verification_url"]) as? String,
              let expires = seconds(object["expires_in"]) else {
            return .failure(.unreadable(status: status, detail: "the answer lacks device_code, user_code, verification_uri or expires_in"))
        }
        return .success(DeviceCode(deviceCode: device, userCode: user, verificationURI: uri,
                                   verificationURIComplete: object["verification_uri_complete"] as? String,
                                   expiresIn: expires, interval: seconds(object["interval"]).map { max(1, $0) } ?? 5))
    }

    /// The JSON object of a 2xx answer, or the failure a non-2xx answer says.
    private static func read(status: Int, body: Data) -> Result<[String: Any], Failure> {
        let object = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any]
        guard (200..<300).contains(status) else {
            if let code = object?["error"] as? String, !code.isEmpty {
                return .failure(.error(code: code, description: object?["error_description"] as? String, status: status))
            }
            return .failure(.unreadable(status: status, detail: "HTTP \(status) without an OAuth2 error"))
        }
        guard let object else {
            return .failure(.unreadable(status: status, detail: "the body is not a JSON object"))
        }
        return .success(object)
    }

    /// A number of seconds, as a number or (as some servers send it) a string of digits.
    private static func seconds(_ value: Any?) -> Double? {
        switch value {
        case let number as NSNumber where number.doubleValue > 0: number.doubleValue
        case let text as String: Double(text).flatMap { $0 > 0 ? $0 : nil }
        default: nil
        }
    }
}

private extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
