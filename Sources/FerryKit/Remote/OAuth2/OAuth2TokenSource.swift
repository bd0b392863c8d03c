import Foundation
import Logging
import Synchronization

/// Access tokens for one OAuth2 grant: the ``RequestAuthorizer`` of every session of the
/// stores that configure it (a `dav-account`'s collections share their account's).
///
/// - Tokens live in memory only, and are renewed shortly before they expire: at the latest a
///   fifth of their life, or a minute, before the end the server announced, counted on this
///   machine's monotonic clock from when the answer arrived. The server's clock is never
///   consulted, so a skewed one changes nothing; a server that still refuses a token early
///   gets a 401, and the session asks for a new token and sends the request again, once.
/// - One request to the token endpoint at a time, whoever asks: operations that need a token
///   while one is being fetched wait for that one (a rotated refresh token is single-use, so
///   two refreshes racing would lock the client out). The requests run on a thread of their
///   own (``BackgroundRunLoop/tokens``), never on an operation's, so a pass cancelled
///   mid-refresh cannot strand the others or lose a rotated refresh token.
/// - A rotated refresh token is saved (``RefreshTokenFile``) before the access token that came
///   with it is handed out.
/// - A refused refresh token or client is ``TransferError/Kind/credentialsRefused``: a pass
///   fails as for a 401 (`ferry sync` exits 77) and says how to authorise again; it is tried
///   again only at the next pass, not in a loop. A token endpoint that is down or slow fails
///   like any transfer (its timeouts are the store's), and is retried with backoff.
public final class OAuth2TokenSource: RequestAuthorizer, @unchecked Sendable {
    public let grant: OAuth2Grant
    let file: RefreshTokenFile
    /// The store's transport settings, for the token endpoint (without an authorizer).
    private let transport: SessionConfiguration
    private let logger = Logger(label: "ferry.oauth2")
    private let now: @Sendable () -> ContinuousClock.Instant
    private let state = Mutex(State())
    /// The token request in flight; touched only on the token thread.
    private var loader: HTTPPageLoader?

    private struct State {
        var token: AccessToken?
        var fetching = false
        var waiters: [Waiter] = []
        /// A rotated refresh token that could not be saved, with its lineage: used instead of
        /// the file's until a save succeeds.
        var unsaved: (token: String, seed: String?)?
    }

    private struct AccessToken {
        var authorization: String
        /// When to stop handing it out; nil when the server did not say how long it lives.
        var renewAt: ContinuousClock.Instant?
    }

    private struct Waiter: @unchecked Sendable {
        let loop: RunLoopHandle
        /// Called on `loop` only.
        let completion: (Result<String, TransferError>) -> Void
    }

    init(grant: OAuth2Grant, file: RefreshTokenFile, transport: SessionConfiguration,
         now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }) {
        self.grant = grant
        self.file = file
        var transport = transport
        transport.authorizer = nil
        self.transport = transport
        self.now = now
    }

    public func currentAuthorization() -> String? {
        let now = now()
        return state.withLock { state in
            guard let token = state.token, token.renewAt.map({ now < $0 }) ?? true else { return nil }
            return token.authorization
        }
    }

    public func authorize(rejecting rejected: String?, on loop: RunLoopHandle,
                          completion: @escaping (Result<String, TransferError>) -> Void) {
        let now = now()
        let waiter = Waiter(loop: loop, completion: completion)
        enum Next { case hand(String), wait, fetch }
        let next: Next = state.withLock { state in
            if let token = state.token, token.authorization != rejected, token.renewAt.map({ now < $0 }) ?? true {
                return .hand(token.authorization)
            }
            state.token = nil
            state.waiters.append(waiter)
            guard !state.fetching else { return .wait }
            state.fetching = true
            return .fetch
        }
        switch next {
        case .hand(let value): loop.perform { waiter.completion(.success(value)) }
        case .wait: break
        case .fetch: BackgroundRunLoop.tokens.perform { self.fetch() }
        }
    }

    /// Asks the token endpoint for a token; on the token thread.
    private func fetch() {
        let refresh: (token: String, seed: String?)?
        switch grant.kind {
        case .clientCredentials:
            refresh = nil
        case .refreshToken:
            switch currentRefreshToken() {
            case .failure(let error):
                return finish(.failure(error))
            case .success(nil):
                return finish(.failure(refused("there is no refresh token: " + reauthorisation)))
            case .success(let found?):
                refresh = found
            }
        }
        let request = OAuth2TokenExchange.tokenRequest(grant, refreshToken: refresh?.token)
        let loader = HTTPPageLoader(configuration: transport)
        self.loader = loader
        loader.load(request, configuredQuery: false) { [self] result in
            self.loader = nil
            let received = now()
            switch result {
            case .failure(let transfer):
                finish(.failure(TransferError(kind: transfer.kind, url: grant.tokenURL, curl: transfer.curl,
                                              detail: redacted("the OAuth2 token endpoint: \(transfer.detail)", refresh?.token))))
            case .success(let page):
                switch OAuth2TokenExchange.token(status: page.head.status, body: page.body) {
                case .failure(let failure):
                    finish(.failure(error(for: failure, refreshToken: refresh?.token)))
                case .success(let token):
                    if let rotated = token.refreshToken, rotated != refresh?.token {
                        save(rotated, seed: refresh?.seed)
                    }
                    finish(.success(token), received: received)
                }
            }
        }
    }

    /// The refresh token to send and the lineage to save its successor with.
    private func currentRefreshToken() -> Result<(token: String, seed: String?)?, TransferError> {
        if let unsaved = state.withLock({ $0.unsaved }) { return .success(unsaved) }
        switch file.load(for: grant) {
        case .failure(let error):
            return .failure(refused(error.description))
        case .success(let saved):
            let configured = grant.refreshToken?.value
            let seed = configured.map(RefreshTokenFile.fingerprint)
            if let saved, configured == nil || saved.seed == seed { return .success((saved.refreshToken, saved.seed)) }
            return .success(configured.map { ($0, seed) })
        }
    }

    /// Saves a rotated refresh token, or keeps it in memory and says so loudly.
    private func save(_ token: String, seed: String?) {
        do {
            try file.save(token, grant: grant, seedFingerprint: seed)
            state.withLock { $0.unsaved = nil }
            logger.debug("OAuth2 refresh token rotated and saved", metadata: ["store": .string(grant.owner), "file": .string(file.path)])
        } catch {
            state.withLock { $0.unsaved = (token, seed) }
            logger.error("the OAuth2 server rotated the refresh token, and it could not be saved (\(error)): it is kept in memory until a later save succeeds, and ferryd stopping before then means authorising again (ferry auth \(grant.owner))",
                         metadata: MessageID.refreshTokenUnsaved.metadata.merging(["store": .string(grant.owner)]) { $1 })
        }
    }

    private func finish(_ result: Result<OAuth2TokenExchange.Token, TransferError>, received: ContinuousClock.Instant? = nil) {
        let handed: Result<String, TransferError> = result.map { "Bearer " + $0.accessToken }
        let waiters = state.withLock { state -> [Waiter] in
            state.fetching = false
            if case .success(let token) = result {
                RuntimeSecrets.remember(token.accessToken)
                token.refreshToken.map(RuntimeSecrets.remember)
            }
            if case .success(let token) = result, let received {
                let renewAt = token.expiresIn.map { life in received + .milliseconds(Int64(1000 * (life - min(60, life / 5)))) }
                state.token = AccessToken(authorization: "Bearer " + token.accessToken, renewAt: renewAt)
            }
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters {
            waiter.loop.perform { waiter.completion(handed) }
        }
    }

    /// What a refusal asks a person to do.
    private var reauthorisation: String {
        grant.deviceURL != nil
            ? "authorise again with: ferry auth \(grant.owner)"
            : "put a new refresh token where oauth2-refresh-token points, or set oauth2-device-url and run: ferry auth \(grant.owner)"
    }

    private func refused(_ detail: String) -> TransferError {
        TransferError(kind: .credentialsRefused, url: grant.tokenURL, detail: detail)
    }

    /// The error a token endpoint's refusal or odd answer stands for.
    private func error(for failure: OAuth2TokenExchange.Failure, refreshToken: String?) -> TransferError {
        switch failure {
        case .error(let code, let description, let status):
            let said = redacted(description.map { "\(code): \($0)" } ?? code, refreshToken)
            guard OAuth2TokenExchange.refusals.contains(code) else {
                return TransferError(kind: .tokenEndpoint, url: grant.tokenURL, detail: "the OAuth2 token endpoint answered HTTP \(status) (\(said))")
            }
            switch (grant.kind, code) {
            case (_, "invalid_client"), (_, "unauthorized_client"), (.clientCredentials, _):
                return refused("the OAuth2 token endpoint refused the client (\(said)); check oauth2-client-id and oauth2-client-secret")
            case (.refreshToken, _):
                return refused("the OAuth2 token endpoint refused the refresh token (\(said)); \(reauthorisation)")
            }
        case .unreadable(let status, let detail):
            let why = (200..<300).contains(status) ? ": " + redacted(detail, refreshToken) : ""
            return TransferError(kind: .tokenEndpoint, url: grant.tokenURL, detail: "the OAuth2 token endpoint answered HTTP \(status) without a token\(why)")
        }
    }

    /// `text` without any secret of the grant's in it, should a server echo one.
    private func redacted(_ text: String, _ refreshToken: String?) -> String {
        text.redacting(grant.secrets.map(\.value) + [refreshToken].compactMap(\.self))
    }
}

extension OAuth2TokenSource {
    private static let sources = Mutex<[OAuth2TokenSource]>([])

    /// The source of `grant`'s tokens for the replica at `databasePath`: one per process for
    /// equal grants, so a reload that keeps a store's credentials keeps its access token, and
    /// stores sharing a grant share one refresh.
    static func shared(_ grant: OAuth2Grant, databasePath: String, transport: SessionConfiguration) -> OAuth2TokenSource {
        let file = RefreshTokenFile(databasePath: databasePath, store: grant.owner)
        var transport = transport
        transport.authorizer = nil
        return sources.withLock { sources in
            if let found = sources.first(where: { $0.grant == grant && $0.file.path == file.path && $0.transport == transport }) {
                return found
            }
            let source = OAuth2TokenSource(grant: grant, file: file, transport: transport)
            sources.append(source)
            return source
        }
    }

    /// Drops the shared source of `grant`, as a new process would start without it: for tests.
    static func forget(_ grant: OAuth2Grant) {
        sources.withLock { $0.removeAll { $0.grant == grant } }
    }
}

extension FerryConfiguration {
    /// The configuration with the sessions of stores that configure OAuth2 getting their
    /// tokens from their grant's ``OAuth2TokenSource``, whose refresh tokens are kept beside
    /// the replica at `databasePath`.
    public func authorizing(databasePath: String) -> FerryConfiguration {
        var configuration = self
        for index in configuration.stores.indices {
            guard let grant = configuration.stores[index].oauth2 else { continue }
            let source = OAuth2TokenSource.shared(grant, databasePath: databasePath, transport: configuration.stores[index].session)
            configuration.stores[index].session.authorizer = SessionAuthorizer(source)
        }
        return configuration
    }
}
