import Foundation
import Synchronization

/// `ferry auth STORE`: the initial authorisation of a store whose OAuth2 grant needs a person,
/// by the device authorization grant (RFC 8628), and a check of one that does not.
///
/// For `oauth2-grant = refresh-token`: ask `oauth2-device-url` for a code, show the person the
/// URL and the code, poll the token endpoint at the interval the server asks for (slower by
/// 5 s at each `slow_down`) until they approve, refuse, or the code expires, and save the
/// refresh token (``RefreshTokenFile``) where ferryd reads it at its next refresh: no reload
/// needed. Run as root, the file is given to the owner of the replica's directory (the
/// service's user). For `client-credentials`: fetch one token, to show the client works.
///
/// Blocking: for the command line, whose main thread has nothing else to do. The requests run
/// on the token thread like ferryd's.
public struct DeviceAuthorization {
    /// What the person has to do.
    public struct Prompt: Sendable, Equatable {
        public let verificationURI: String
        public let userCode: String
        /// The URL with the code in it, when the server gives one (for a QR code or a click).
        public let verificationURIComplete: String?
        public let expiresIn: Double
    }

    public enum Outcome: Sendable, Equatable {
        /// A refresh token was obtained and saved there.
        case saved(path: String)
        /// The client-credentials grant got a token: nothing to save.
        case clientWorks
    }

    public let store: String
    public let grant: OAuth2Grant
    let file: RefreshTokenFile
    let transport: SessionConfiguration
    /// Waits between polls; a test passes one that does not sleep the full interval.
    var sleep: @Sendable (Double) -> Void = { Thread.sleep(forTimeInterval: $0) }

    /// `store` of `configuration` (a `dav-account`'s collection names its account), its
    /// refresh token kept beside the replica at `databasePath`.
    public init(store name: String, configuration: FerryConfiguration, databasePath: String) throws(DeviceAuthorizationError) {
        guard let store = configuration.store(named: name) else {
            throw .unknownStore(name, known: configuration.stores.filter { $0.oauth2 != nil }.map(\.name))
        }
        guard let grant = store.oauth2 else { throw .notOAuth2(name) }
        self.store = name
        self.grant = grant
        // Root writes for the service: whoever owns the replica's directory (RefreshTokenFile).
        file = RefreshTokenFile(databasePath: databasePath, store: grant.owner)
        var transport = store.session
        transport.authorizer = nil
        self.transport = transport
    }

    /// Runs the grant; `prompt` is called once with what the person must do.
    public func run(prompt: (Prompt) -> Void) throws(DeviceAuthorizationError) -> Outcome {
        switch grant.kind {
        case .clientCredentials:
            let page = try send(OAuth2TokenExchange.tokenRequest(grant, refreshToken: nil))
            switch OAuth2TokenExchange.token(status: page.status, body: page.body) {
            case .success: return .clientWorks
            case .failure(let failure): throw .refused(describe(failure))
            }
        case .refreshToken:
            guard let deviceURL = grant.deviceURL else { throw .noDeviceURL(store) }
            let answer = try send(OAuth2TokenExchange.deviceAuthorizationRequest(grant, url: deviceURL))
            let code: OAuth2TokenExchange.DeviceCode
            switch OAuth2TokenExchange.deviceCode(status: answer.status, body: answer.body) {
            case .success(let value):
                code = value
                // A server that quotes the device code back in an error must not show it.
                RuntimeSecrets.remember(value.deviceCode)
            case .failure(let failure): throw .refused(describe(failure))
            }
            prompt(Prompt(verificationURI: code.verificationURI, userCode: code.userCode,
                          verificationURIComplete: code.verificationURIComplete, expiresIn: code.expiresIn))
            let token = try poll(code)
            guard let refresh = token.refreshToken else { throw .noRefreshToken }
            do {
                try file.save(refresh, grant: grant, seedFingerprint: grant.refreshToken.map { RefreshTokenFile.fingerprint($0.value) })
            } catch {
                throw .notSaved(error)
            }
            return .saved(path: file.path)
        }
    }

    /// Polls the token endpoint until the person decided or the code expired (RFC 8628 §3.5).
    private func poll(_ code: OAuth2TokenExchange.DeviceCode) throws(DeviceAuthorizationError) -> OAuth2TokenExchange.Token {
        var interval = code.interval
        let deadline = ContinuousClock.now + .milliseconds(Int64(code.expiresIn * 1000))
        while ContinuousClock.now < deadline {
            sleep(interval)
            let page = try send(OAuth2TokenExchange.deviceTokenRequest(grant, deviceCode: code.deviceCode))
            switch OAuth2TokenExchange.token(status: page.status, body: page.body) {
            case .success(let token):
                return token
            case .failure(.error(code: "authorization_pending", _, _)):
                continue
            case .failure(.error(code: "slow_down", _, _)):
                interval += 5
            case .failure(.error(code: "access_denied", _, _)):
                throw .denied
            case .failure(.error(code: "expired_token", _, _)):
                throw .expired
            case .failure(let failure):
                throw .refused(describe(failure))
            }
        }
        throw .expired
    }

    /// One request on the token thread, waited for.
    private func send(_ request: HTTPRequest) throws(DeviceAuthorizationError) -> (status: Int, body: Data) {
        let result = Mutex<Result<(status: Int, body: Data), TransferError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let transport = transport
        BackgroundRunLoop.tokens.perform {
            let loader = HTTPPageLoader(configuration: transport)
            loader.load(request, configuredQuery: false) { answer in
                // The loader lives until its answer: its completion is the last thing holding it.
                _ = loader
                result.withLock { $0 = answer.map { ($0.head.status, $0.body) } }
                done.signal()
            }
        }
        done.wait()
        switch result.withLock({ $0 }) {
        case .success(let page)?: return page
        case .failure(let error)?: throw .transfer(error)
        case nil: preconditionFailure("DeviceAuthorization: signalled without an answer")
        }
    }

    private func describe(_ failure: OAuth2TokenExchange.Failure) -> String {
        let text = switch failure {
        case .error(let code, let description, let status): "HTTP \(status), \(code)" + (description.map { ": \($0)" } ?? "")
        case .unreadable(let status, let detail): "HTTP \(status): \(detail)"
        }
        return text.redactingSecrets(grant.secrets)
    }
}

/// Why `ferry auth` did not authorise.
public enum DeviceAuthorizationError: Error, Sendable, CustomStringConvertible {
    case unknownStore(String, known: [String])
    case notOAuth2(String)
    case noDeviceURL(String)
    /// The server refused the client or the request (the words name no secret).
    case refused(String)
    case denied
    case expired
    /// The server authorised but issued no refresh token.
    case noRefreshToken
    case transfer(TransferError)
    case notSaved(AtomicFile.WriteError)

    public var description: String {
        switch self {
        case .unknownStore(let name, let known):
            "no store named '\(name)' in the configuration (stores with oauth2-* keys: \(known.isEmpty ? "none" : known.joined(separator: ", ")))"
        case .notOAuth2(let name): "store '\(name)' has no oauth2-* keys: there is nothing to authorise"
        case .noDeviceURL(let name):
            "store '\(name)' has no oauth2-device-url: set it to the server's device authorization endpoint (RFC 8628), or put a refresh token where oauth2-refresh-token points"
        case .refused(let detail): "the authorization server refused: \(detail)"
        case .denied: "the authorisation was denied"
        case .expired: "the code expired before it was approved; run ferry auth again"
        case .noRefreshToken: "the server authorised, but issued no refresh token (does the client need a scope such as offline_access in oauth2-scope?)"
        case .transfer(let error): "the authorization server could not be reached: \(error)"
        case .notSaved(let error): "the refresh token was issued but not saved: \(error); run ferry auth again once that is fixed"
        }
    }
}
