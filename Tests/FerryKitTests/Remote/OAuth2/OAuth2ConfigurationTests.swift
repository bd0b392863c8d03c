@testable import FerryKit
import FerryTestSupport
import Foundation
import Testing

/// The `oauth2-*` keys, the requests sent to a token endpoint and how its answers read, and
/// the saved refresh token: no server needed.
@Suite struct OAuth2ConfigurationTests {
    static let file = "/etc/ferry/test.conf"

    /// A configuration directory with credentials `client` (the client secret) and `refresh`.
    struct Directory {
        let directory: TemporaryDirectory
        var environment: [String: String] { ["CREDENTIALS_DIRECTORY": directory.path("credentials"), "STATE_DIRECTORY": directory.path("state")] }

        init() throws {
            directory = try TemporaryDirectory()
            try FileManager.default.createDirectory(atPath: directory.path("credentials"), withIntermediateDirectories: true)
            for (name, value) in ["client": "client-secret-value", "refresh": "refresh-token-value"] {
                try value.write(toFile: directory.path("credentials/\(name)"), atomically: true, encoding: .utf8)
            }
        }

        func parse(_ text: String) throws(ConfigurationErrors) -> FerryConfiguration {
            try ConfigurationLoader.parse(text: text, file: OAuth2ConfigurationTests.file, environment: environment)
        }

        func problems(_ text: String) -> [String] {
            do {
                _ = try parse(text)
                return []
            } catch {
                return error.problems.map { "\($0.line) \($0.key ?? "-"): \($0.message)" }
            }
        }
    }

    static let store = """
        [store things]
        kind = json
        url = https://api.example.com/things
        """

    @Test func refreshTokenGrant_isReadWithItsSecrets_andGivesTheStoreAnAuthorizer() throws {
        let directory = try Directory()
        let keys = """

            oauth2-token-url = https://auth.example.com/oauth/token
            oauth2-device-url = https://auth.example.com/oauth/device
            oauth2-client-id = ferry
            oauth2-client-secret = credential:client
            oauth2-refresh-token = credential:refresh
            oauth2-scope = read offline_access
            """
        let configuration = try directory.parse(Self.store + keys)
        let store = try #require(configuration.stores.first)
        let grant = try #require(store.oauth2)
        #expect(grant.kind == .refreshToken && grant.owner == "things" && grant.clientAuthentication == .basic)
        #expect(grant.clientSecret?.value == "client-secret-value" && grant.refreshToken?.value == "refresh-token-value")
        #expect(grant.scope == "read offline_access" && grant.deviceURL == "https://auth.example.com/oauth/device")
        #expect(store.session.authorizer != nil)
        #expect(store.secrets.map(\.value).contains("refresh-token-value"))
        #expect(!"\(grant)".contains("client-secret-value") && !"\(grant)".contains("refresh-token-value"))
        // Loading again (a reload) gives the same token source: the access token survives it.
        let again = try directory.parse(Self.store + keys)
        #expect(again.stores.first?.session == store.session)
    }

    @Test func badOAuth2Keys_areProblemsNamingTheKey() throws {
        let directory = try Directory()
        #expect(directory.problems(Self.store + "\noauth2-client-id = ferry") == [
            "1 oauth2-token-url: store 'things' uses OAuth2 and needs oauth2-token-url (the token endpoint, https://...)",
        ])
        #expect(directory.problems(Self.store + "\noauth2-token-url = http://auth.example.com/token\noauth2-client-id = ferry") == [
            "4 oauth2-token-url: an OAuth2 endpoint must be https:// (the requests carry secrets); plain http is allowed only to 127.0.0.1 or localhost",
        ])
        #expect(directory.problems(Self.store + "\noauth2-grant = client-credentials\noauth2-token-url = https://a.example/t\noauth2-client-id = f") == [
            "4 oauth2-client-secret: oauth2-grant = client-credentials needs oauth2-client-secret = credential:NAME",
        ])
        #expect(directory.problems(Self.store + """

            oauth2-grant = client-credentials
            oauth2-token-url = https://a.example/t
            oauth2-client-id = f
            oauth2-client-secret = credential:client
            oauth2-refresh-token = credential:refresh
            """) == ["8 oauth2-refresh-token: has no effect with oauth2-grant = client-credentials (no person authorises it); remove it"])
        #expect(directory.problems(Self.store + "\noauth2-grant = password\noauth2-token-url = https://a.example/t\noauth2-client-id = f") == [
            "4 oauth2-grant: expected one of refresh-token, client-credentials, got 'password'",
        ])
        #expect(directory.problems(Self.store + "\noauth2-token-url = https://a.example/t\noauth2-client-id = f\noauth2-client-secret = inline") == [
            "6 oauth2-client-secret: inline secrets are refused; write credential:NAME (systemd LoadCredential=) or file:/path/to/secret (a file readable only by its owner)",
        ])
        #expect(directory.problems(Self.store + "\nbearer-token = credential:refresh\noauth2-token-url = https://a.example/t\noauth2-client-id = f") == [
            "4 bearer-token: the store gets OAuth2 access tokens (oauth2-* keys), which go in the Authorization header bearer-token would set; keep one of them",
        ])
    }

    @Test func tokenRequests_encodeTheFormAndTheClientAsRFC6749Says() throws {
        #expect(OAuth2TokenExchange.formEncode("a b+c/é~_.-") == "a+b%2Bc%2F%C3%A9~_.-")
        var grant = OAuth2Grant(kind: .refreshToken, tokenURL: "https://a.example/token", clientID: "my client", owner: "things")
        grant.clientSecret = Secret("s:e&cret", source: "test")
        grant.scope = "read write"
        let basic = OAuth2TokenExchange.tokenRequest(grant, refreshToken: "r/1")
        #expect(basic.method == "POST" && basic.url == "https://a.example/token")
        #expect(basic.headers["Content-Type"] == "application/x-www-form-urlencoded")
        #expect(basic.headers["Authorization"] == "Basic " + Data("my+client:s%3Ae%26cret".utf8).base64EncodedString())
        #expect(String(decoding: basic.body ?? Data(), as: UTF8.self) == "grant_type=refresh_token&refresh_token=r%2F1&scope=read+write")

        grant.clientAuthentication = .body
        let body = OAuth2TokenExchange.tokenRequest(grant, refreshToken: "r")
        #expect(body.headers["Authorization"] == nil)
        #expect(String(decoding: body.body ?? Data(), as: UTF8.self)
            == "grant_type=refresh_token&refresh_token=r&scope=read+write&client_id=my+client&client_secret=s%3Ae%26cret")

        grant.clientSecret = nil
        let device = OAuth2TokenExchange.deviceTokenRequest(grant, deviceCode: "D")
        #expect(String(decoding: device.body ?? Data(), as: UTF8.self)
            == "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Adevice_code&device_code=D&client_id=my+client")
        grant.kind = .clientCredentials
        #expect(String(decoding: OAuth2TokenExchange.tokenRequest(grant, refreshToken: nil).body ?? Data(), as: UTF8.self)
            == "grant_type=client_credentials&scope=read+write&client_id=my+client")
    }

    @Test func tokenAnswers_readAsTheSpecSays() {
        func token(_ status: Int, _ body: String) -> Result<OAuth2TokenExchange.Token, OAuth2TokenExchange.Failure> {
            OAuth2TokenExchange.token(status: status, body: Data(body.utf8))
        }
        #expect(token(200, #"{"access_token":"A","token_type":"bearer","expires_in":3600,"refresh_token":"R2"}"#)
            == .success(.init(accessToken: "A", expiresIn: 3600, refreshToken: "R2")))
        // expires_in as a string (some servers), none at all, and an empty refresh token.
        #expect(token(200, #"{"access_token":"A","token_type":"Bearer","expires_in":"60","refresh_token":""}"#)
            == .success(.init(accessToken: "A", expiresIn: 60)))
        #expect(token(200, #"{"access_token":"A","token_type":"Bearer"}"#) == .success(.init(accessToken: "A")))
        #expect(token(200, #"{"access_token":"A","token_type":"mac"}"#)
            == .failure(.unreadable(status: 200, detail: #"the token is of type "mac", and only bearer tokens can be sent"#)))
        #expect(token(200, #"{"token_type":"Bearer"}"#) == .failure(.unreadable(status: 200, detail: "the answer has no access_token")))
        #expect(token(200, "<html>") == .failure(.unreadable(status: 200, detail: "the body is not a JSON object")))
        #expect(token(400, #"{"error":"invalid_grant","error_description":"Token is not active"}"#)
            == .failure(.error(code: "invalid_grant", description: "Token is not active", status: 400)))
        #expect(token(503, "busy") == .failure(.unreadable(status: 503, detail: "HTTP 503 without an OAuth2 error")))
        #expect(OAuth2TokenExchange.deviceCode(status: 200, body: Data(#"{"device_code":"D","user_code":"U","verification_uri":"https://v","expires_in":600}"#.utf8))
            == .success(.init(deviceCode: "D", userCode: "U", verificationURI: "https://v", expiresIn: 600, interval: 5)))
    }

    @Test func savedRefreshToken_isPrivate_boundToItsClient_andYieldsToANewConfiguredOne() throws {
        let directory = try TemporaryDirectory()
        let file = RefreshTokenFile(databasePath: directory.path("ferry.db"), store: "things")
        #expect(file.path == directory.path("oauth2-tokens/things.json"))
        var grant = OAuth2Grant(kind: .refreshToken, tokenURL: "https://a.example/token", clientID: "ferry", owner: "things")
        #expect(try file.load(for: grant).get() == nil)

        grant.refreshToken = Secret("configured", source: "test")
        try file.save("rotated", grant: grant, seedFingerprint: RefreshTokenFile.fingerprint("configured"))
        var info = stat()
        #expect(stat(file.path, &info) == 0 && info.st_mode & 0o777 == 0o600)
        #expect(stat(file.directory, &info) == 0 && info.st_mode & 0o777 == 0o700)
        let text = try String(contentsOfFile: file.path, encoding: .utf8)
        #expect(text.contains("rotated") && !text.contains("configured"), "only a fingerprint of the configured token")
        #expect(try file.load(for: grant).get()?.refreshToken == "rotated")

        // Another client or endpoint does not get it.
        var other = grant
        other.clientID = "someone-else"
        #expect(try file.load(for: other).get() == nil)

        // A leftover temporary file of a write that was cut short changes nothing.
        try "garbage".write(toFile: file.path + ".tmp.99999", atomically: false, encoding: .utf8)
        #expect(try file.load(for: grant).get()?.refreshToken == "rotated")

        // A damaged file is an error naming it, never its content.
        try "{\"refresh_token\": ".write(toFile: file.path, atomically: false, encoding: .utf8)
        guard case .failure(let error) = file.load(for: grant) else {
            Issue.record("a damaged token file was read")
            return
        }
        #expect(error.description.contains(file.path) && error.description.contains("ferry auth things"))
    }
}
