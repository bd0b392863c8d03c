import Foundation

/// How a store gets OAuth2 access tokens (RFC 6749): the grant, the token endpoint and the
/// client, from the store's `oauth2-*` keys.
///
/// ```
/// oauth2-grant = refresh-token            # or client-credentials
/// oauth2-token-url = https://auth.example.com/oauth/token
/// oauth2-client-id = ferry
/// oauth2-client-secret = credential:example-client-secret   # a confidential client
/// oauth2-refresh-token = credential:example-refresh-token   # or: ferry auth STORE
/// oauth2-device-url = https://auth.example.com/oauth/device  # for ferry auth (RFC 8628)
/// oauth2-scope = read write
/// ```
///
/// Access tokens are kept in memory only (``OAuth2TokenSource``). A refresh token the server
/// rotates, or one `ferry auth` obtained, is kept in Ferry's state (``RefreshTokenFile``).
public struct OAuth2Grant: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable {
        /// RFC 6749 §6: a refresh token a person once authorised, exchanged for access tokens.
        case refreshToken = "refresh-token"
        /// RFC 6749 §4.4: the client's own credentials, no person involved.
        case clientCredentials = "client-credentials"
    }

    /// How the client authenticates to the token endpoint (RFC 6749 §2.3.1).
    public enum ClientAuthentication: String, Sendable, CaseIterable {
        /// HTTP Basic with the form-encoded id and secret: what every server must accept.
        case basic
        /// `client_id` and `client_secret` in the form body, for servers that take only that.
        case body
    }

    public var kind: Kind
    public var tokenURL: String
    /// The device authorization endpoint (RFC 8628) `ferry auth` starts from; nil when the
    /// store's refresh token comes from elsewhere.
    public var deviceURL: String?
    public var clientID: String
    public var clientSecret: Secret?
    /// The refresh token in the configuration (`credential:NAME`): the one to start from, until
    /// the server rotates it or `ferry auth` replaces it.
    public var refreshToken: Secret?
    public var scope: String?
    public var clientAuthentication: ClientAuthentication = .basic
    /// The store section the keys are in: names the saved refresh token and the store
    /// `ferry auth` takes. A `dav-account`'s collections share their account's.
    public var owner: String

    public init(kind: Kind, tokenURL: String, clientID: String, owner: String) {
        self.kind = kind
        self.tokenURL = tokenURL
        self.clientID = clientID
        self.owner = owner
    }

    /// The configured secrets, for redaction.
    public var secrets: [Secret] { [clientSecret, refreshToken].compactMap(\.self) }

    /// The keys a store section may set.
    static let keys: Set<String> = [
        "oauth2-grant", "oauth2-token-url", "oauth2-device-url", "oauth2-client-id", "oauth2-client-secret",
        "oauth2-refresh-token", "oauth2-scope", "oauth2-client-auth",
    ]
    static let secretKeys: Set<String> = ["oauth2-client-secret", "oauth2-refresh-token"]
}

extension ConfigurationValueReader {
    /// The grant the `oauth2-*` entries of store `store` describe; nil (with problems) when
    /// they do not make one, and nil without problems when there are none.
    mutating func oauth2Grant(_ entries: [ConfigurationSyntax.Entry], store: String, section: ConfigurationLocation,
                              secrets: SecretResolver) -> OAuth2Grant? {
        guard !entries.isEmpty else { return nil }
        var byKey: [String: ConfigurationSyntax.Entry] = [:]
        for entry in entries { byKey[entry.key] = entry }
        var valid = true
        var kind = OAuth2Grant.Kind.refreshToken
        if let entry = byKey["oauth2-grant"] {
            if let value = choice(entry, OAuth2Grant.Kind.self, allowed: OAuth2Grant.Kind.allCases) { kind = value } else { valid = false }
        }
        func required(_ key: String, _ purpose: String) -> ConfigurationSyntax.Entry? {
            guard let entry = byKey[key], !entry.value.isEmpty else {
                problems.append(.init(file: file, line: byKey[key]?.line ?? section.line, key: key,
                                      message: "store '\(store)' uses OAuth2 and needs \(key) (\(purpose))"))
                return nil
            }
            return entry
        }
        let tokenURL = required("oauth2-token-url", "the token endpoint, https://...").flatMap { endpoint($0) }
        let clientID = required("oauth2-client-id", "the client's id the authorization server issued")?.value
        let deviceURL = byKey["oauth2-device-url"].flatMap { endpoint($0) }
        if byKey["oauth2-device-url"] != nil, deviceURL == nil { valid = false }
        var resolved: [String: Secret] = [:]
        for key in OAuth2Grant.secretKeys {
            guard let entry = byKey[key] else { continue }
            switch secrets.resolve(entry.value) {
            case .success(let secret): resolved[key] = secret
            case .failure(let problem):
                self.problem(entry, problem.message)
                valid = false
            }
        }
        var clientAuthentication = OAuth2Grant.ClientAuthentication.basic
        if let entry = byKey["oauth2-client-auth"] {
            if let value = choice(entry, OAuth2Grant.ClientAuthentication.self, allowed: OAuth2Grant.ClientAuthentication.allCases) {
                clientAuthentication = value
            } else {
                valid = false
            }
        }
        switch kind {
        case .clientCredentials:
            if byKey["oauth2-client-secret"] == nil {
                problems.append(.init(file: file, line: byKey["oauth2-grant"]?.line ?? section.line, key: "oauth2-client-secret",
                                      message: "oauth2-grant = client-credentials needs oauth2-client-secret = credential:NAME"))
                valid = false
            }
            for key in ["oauth2-refresh-token", "oauth2-device-url"] {
                if let entry = byKey[key] {
                    self.problem(entry, "has no effect with oauth2-grant = client-credentials (no person authorises it); remove it")
                    valid = false
                }
            }
        case .refreshToken:
            break
        }
        guard valid, let tokenURL, let clientID else { return nil }
        var grant = OAuth2Grant(kind: kind, tokenURL: tokenURL, clientID: clientID, owner: store)
        grant.deviceURL = deviceURL
        grant.clientSecret = resolved["oauth2-client-secret"]
        grant.refreshToken = resolved["oauth2-refresh-token"]
        grant.scope = byKey["oauth2-scope"].flatMap { $0.value.isEmpty ? nil : $0.value }
        grant.clientAuthentication = clientAuthentication
        return grant
    }

    /// An OAuth2 endpoint: https, or http to this machine only. RFC 6749 requires TLS: the
    /// requests carry the client secret and the refresh token.
    private mutating func endpoint(_ entry: ConfigurationSyntax.Entry) -> String? {
        guard let components = URLComponents(string: entry.value), let scheme = components.scheme?.lowercased(),
              let host = components.host, !host.isEmpty, scheme == "https" || scheme == "http" else {
            problem(entry, "expected an https:// URL, got '\(entry.value)'")
            return nil
        }
        guard components.user == nil, components.password == nil else {
            problem(entry, "must not carry credentials in the URL; the client secret goes in oauth2-client-secret")
            return nil
        }
        let loopback = ["127.0.0.1", "localhost", "::1", "[::1]"].contains(host.lowercased())
        guard scheme == "https" || loopback else {
            problem(entry, "an OAuth2 endpoint must be https:// (the requests carry secrets); plain http is allowed only to 127.0.0.1 or localhost")
            return nil
        }
        return entry.value
    }
}
