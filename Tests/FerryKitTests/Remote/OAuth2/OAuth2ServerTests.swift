import CoreFoundation
import Foundation
import Logging
import Synchronization
import Testing
@testable import FerryKit
import FerryTestSupport

/// OAuth2 against a token server on 127.0.0.1 (`Tests/Servers/oauth2_server.py`) that also
/// serves the records it protects: rotation, expiry mid-pass, revocation, a skewed clock, a
/// slow or failing token endpoint, the client-credentials grant and `ferry auth`'s device flow.
@Suite("OAuth2 against a token server", .serialized)
struct OAuth2ServerTests {
    static let clientSecret = "client-secret-value"
    static let initialRefreshToken = "initial-refresh-token"

    /// A token server, a configuration of one JSON store `things` reading its records, and a
    /// replica.
    struct Fixture {
        let server: TestServer
        let directory: TemporaryDirectory
        let configurationPath: String
        var database: String { directory.path("ferry.db") }
        var tokenFile: String { directory.path("oauth2-tokens/things.json") }

        init(serverArguments: [String] = ["--rotate"], keys: String = "") throws {
            server = try TestServer.python("oauth2_server.py", arguments: [
                "--client-id", "ferry", "--client-secret", OAuth2ServerTests.clientSecret,
                "--refresh-token", OAuth2ServerTests.initialRefreshToken,
            ] + serverArguments)
            directory = try TemporaryDirectory()
            try FileManager.default.createDirectory(atPath: directory.path("credentials"), withIntermediateDirectories: true)
            for (name, value) in ["client": OAuth2ServerTests.clientSecret, "refresh": OAuth2ServerTests.initialRefreshToken] {
                try value.write(toFile: directory.path("credentials/\(name)"), atomically: true, encoding: .utf8)
                chmod(directory.path("credentials/\(name)"), 0o600)
            }
            configurationPath = directory.path("ferry.conf")
            try """
                [ferry]
                database = \(directory.path("ferry.db"))

                [store things]
                kind = json
                url = \(server.baseURL)/records
                pagination = link
                id-field = id
                version-field = version
                oauth2-token-url = \(server.baseURL)/token
                oauth2-device-url = \(server.baseURL)/device
                oauth2-client-id = ferry
                oauth2-client-secret = credential:client
                \(keys.isEmpty ? "oauth2-refresh-token = credential:refresh" : keys)
                """.write(toFile: configurationPath, atomically: true, encoding: .utf8)
        }

        func load() throws -> FerryConfiguration {
            try ConfigurationLoader.load(path: configurationPath, environment: [:])
        }

        /// One `ferry sync` of `things` with `configuration` (a fresh load: a new process's
        /// token source, unless the grant is equal to one loaded before in this process).
        func sync(_ configuration: FerryConfiguration) throws -> Result<PassReport, SyncError> {
            let sync = try OneShotSync(configuration: configuration, storeNames: ["things"], databasePath: database, logger: Logger(label: "test"))
            return try #require(sync.run(refresh: .milliseconds(50)) { _ in }.first?.result)
        }

        func configure(_ settings: String) throws {
            _ = try server.control("/admin/config", method: "POST", body: settings)
        }

        func state() throws -> [String: Any] {
            try JSONSerialization.jsonObject(with: try server.control("/admin/state")) as? [String: Any] ?? [:]
        }

        func count(_ key: String) throws -> Int { try state()[key] as? Int ?? -1 }

        func savedRefreshToken() throws -> String? {
            guard let data = FileManager.default.contents(atPath: tokenFile) else { return nil }
            return (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["refresh_token"] as? String
        }

        func stop() { server.stop() }
    }

    @Test func rotatedRefreshTokens_areSavedBeforeUse_andNoSecretReachesTheReplica() throws {
        let fixture = try Fixture()
        defer { fixture.stop() }
        let configuration = try fixture.load()
        let first = try fixture.sync(configuration).get()
        #expect(first.counts.inserted == 35 && first.pages == 4)
        #expect(try fixture.count("token_requests") == 1 && fixture.count("resource_401") == 0)
        let rotated = try #require(try fixture.savedRefreshToken())
        #expect(rotated != Self.initialRefreshToken)

        // The same process keeps its access token: no second token request.
        _ = try fixture.sync(configuration).get()
        #expect(try fixture.count("token_requests") == 1)

        // A new process (a token source of its own) refreshes with the saved token, which the
        // server rotates again; the initial one, dead since the first rotation, is never sent.
        OAuth2TokenSource.forget(try #require(configuration.stores.first?.oauth2))
        let again = try fixture.sync(try fixture.load()).get()
        #expect(again.counts.inserted == 0 && again.isComplete)
        #expect(try fixture.count("token_requests") == 2 && fixture.count("reused") == 0 && fixture.count("valid_refresh_tokens") == 1)
        #expect(try (fixture.state()["presented"] as? [String]) == [Self.initialRefreshToken, rotated])
        #expect(try fixture.savedRefreshToken() != rotated)

        // Access tokens live in memory only; no token of any kind is in the replica.
        let replica = try Data(contentsOf: URL(fileURLWithPath: fixture.database))
        for secret in [Self.clientSecret, Self.initialRefreshToken, rotated] {
            #expect(replica.range(of: Data(secret.utf8)) == nil)
        }
        #expect(try !String(contentsOfFile: fixture.tokenFile, encoding: .utf8).contains("access"))
    }

    /// `sudo ferry sync` of a store whose server rotates refresh tokens: the rotated token's
    /// file belongs to the replica directory's owner (the service's user), not root, or the
    /// service could not read the only live token left.
    @Test func aTokenRotatedByRootBelongsToTheReplicasOwner() throws {
        guard geteuid() == 0 else {
            try #require(!isCI, "CI runs as root and must check this")
            return
        }
        let fixture = try Fixture()
        defer { fixture.stop() }
        let nobody: uid_t = 65534
        let group: gid_t = 65534
        #expect(chown(fixture.directory.url.path, nobody, group) == 0)
        _ = try fixture.sync(try fixture.load()).get()
        var info = stat()
        #expect(stat(fixture.tokenFile, &info) == 0)
        #expect(info.st_uid == nobody && info.st_gid == group, "owner \(info.st_uid):\(info.st_gid)")
        #expect(info.st_mode & 0o777 == 0o600)
        #expect(stat(fixture.directory.path("oauth2-tokens"), &info) == 0 && info.st_uid == nobody)
    }

    /// A server that quotes the request's Authorization header back in an error page: the
    /// access token, fetched at run time, is redacted like a configured secret from the error,
    /// the replica's sync state and `ferry status`.
    @Test func anAccessTokenQuotedBackIsRedacted() throws {
        let fixture = try Fixture()
        defer { fixture.stop() }
        try fixture.configure(#"{"quote_authorization": true}"#)
        guard case .failure(let error) = try fixture.sync(try fixture.load()) else {
            Issue.record("the pass succeeded against a 502")
            return
        }
        let token = try #require(try fixture.state()["last_access_token"] as? String)
        #expect(token.count >= 8)
        #expect(!error.description.contains(token), "\(error)")
        #expect(error.description.contains("Bearer"), "the quote is still there, redacted: \(error)")
        let replica = try Data(contentsOf: URL(fileURLWithPath: fixture.database))
        #expect(replica.range(of: Data(token.utf8)) == nil, "not in the replica's sync state")
        let lastError = try Shell.sqlite(fixture.database, "SELECT last_error FROM ferry_sync_state WHERE store = 'things'").joined()
        #expect(!lastError.contains(token) && lastError.contains("502"), "\(lastError)")
    }

    @Test func anAccessTokenThatDiesMidPass_isRefreshedOnce_andThePassCompletes() throws {
        let fixture = try Fixture(serverArguments: [])
        defer { fixture.stop() }
        // Every access token is refused after two requests: the four-page pass meets a 401 on
        // its third page and again on none after the refresh (two more requests).
        try fixture.configure(#"{"die_after_requests": 2}"#)
        let configuration = try fixture.load()
        let report = try fixture.sync(configuration).get()
        #expect(report.counts.inserted == 35 && report.pages == 4 && report.isComplete)
        #expect(try fixture.count("resource_401") == 1 && fixture.count("token_requests") == 2)
    }

    @Test func aTokenNearItsEnd_isRenewedBeforeUse_whateverTheServersClockSays() throws {
        let fixture = try Fixture(serverArguments: ["--lifetime", "2"])
        defer { fixture.stop() }
        // The server's Date is two hours behind ours: expiry is counted from expires_in on
        // this machine's clock, so neither "already expired" nor "valid for hours" follows.
        try fixture.configure(#"{"date_skew": -7200}"#)
        let configuration = try fixture.load()
        _ = try fixture.sync(configuration).get()
        #expect(try fixture.count("token_requests") == 1)
        // Past four fifths of its life the token is not handed out again: a refresh comes first.
        Thread.sleep(forTimeInterval: 1.8)
        _ = try fixture.sync(configuration).get()
        #expect(try fixture.count("token_requests") == 2 && fixture.count("resource_401") == 0)
    }

    @Test func aRevokedRefreshToken_failsThePassAsRefusedCredentials_sayingHowToReauthorise() throws {
        let fixture = try Fixture()
        defer { fixture.stop() }
        let configuration = try fixture.load()
        _ = try fixture.sync(configuration).get()
        _ = try fixture.server.control("/admin/revoke", method: "POST", body: "{}")
        let requestsBefore = try fixture.count("token_requests")
        guard case .failure(let error) = try fixture.sync(configuration) else {
            Issue.record("a pass with revoked tokens succeeded")
            return
        }
        #expect(error.kind == .unauthorized && !error.isRetryable)
        #expect(FerryExitCode.for(error) == .permission)
        #expect(error.description.contains("refused the refresh token (invalid_grant: Token is not active); authorise again with: ferry auth things"),
                "\(error)")
        // One refresh tried, after the resource's 401; no loop.
        #expect(try fixture.count("token_requests") == requestsBefore + 1)
        let saved = try #require(try fixture.savedRefreshToken())
        #expect(!error.description.contains(saved) && !error.description.contains(Self.clientSecret))
        // ferry status says the same.
        let states = try ReplicaDatabase.openReadOnly(path: fixture.database).syncStates()
        #expect(states.first?.lastError?.contains("ferry auth things") == true)
    }

    @Test func aSlowTokenEndpoint_isWaitedForOnce_byEveryoneWhoNeedsAToken() throws {
        let fixture = try Fixture(serverArguments: [])
        defer { fixture.stop() }
        try fixture.configure(#"{"delay": 0.5}"#)
        let configuration = try fixture.load()
        let source = try #require(configuration.stores.first?.session.authorizer?.base)
        // Six requests for a token at once, from three threads: one token request, six answers.
        let answers = Mutex<[Result<String, TransferError>]>([])
        let done = DispatchSemaphore(value: 0)
        for _ in 0..<3 {
            Thread.detachNewThread {
                // A loop without a source returns at once; this timer never fires.
                let keepAlive = CFRunLoopTimerCreateWithHandler(nil, Date.distantFuture.timeIntervalSinceReferenceDate, 0, 0, 0) { _ in }
                CFRunLoopAddTimer(CFRunLoopGetCurrent(), keepAlive, kCFRunLoopDefaultMode)
                let loop = RunLoopHandle.current()
                for _ in 0..<2 {
                    source.authorize(rejecting: nil, on: loop) { result in
                        answers.withLock { $0.append(result) }
                        done.signal()
                    }
                }
                let end = Date().addingTimeInterval(5)
                while Date() < end { _ = RunLoop.current.run(mode: .default, before: end) }
                CFRunLoopTimerInvalidate(keepAlive)
            }
        }
        for _ in 0..<6 { #expect(done.wait(timeout: .now() + 10) == .success) }
        let values = answers.withLock { $0.compactMap { try? $0.get() } }
        #expect(values.count == 6 && Set(values).count == 1)
        #expect(try fixture.count("token_requests") == 1 && fixture.count("max_concurrent_token") == 1)
    }

    @Test func aTokenEndpointSlowerThanTheTimeout_orFailing_isARetryableTransportFailure() throws {
        let fixture = try Fixture(serverArguments: [], keys: "oauth2-refresh-token = credential:refresh\ntotal-timeout = 1s")
        defer { fixture.stop() }
        try fixture.configure(#"{"delay": 3}"#)
        let configuration = try fixture.load()
        guard case .failure(let slow) = try fixture.sync(configuration) else {
            Issue.record("a pass waited past total-timeout for its token")
            return
        }
        #expect(slow.kind == .transport(.totalTimeout) && slow.isRetryable)
        #expect(slow.description.contains("the OAuth2 token endpoint"), "\(slow)")

        try fixture.configure(#"{"delay": 0, "token_status": 503}"#)
        guard case .failure(let failing) = try fixture.sync(configuration) else {
            Issue.record("a pass without a token succeeded")
            return
        }
        #expect(failing.kind == .transport(.tokenEndpoint) && failing.isRetryable)
        #expect(failing.description.contains("answered HTTP 503 without a token"), "\(failing)")

        // Back up: the next pass gets its token.
        try fixture.configure(#"{"token_status": 0}"#)
        #expect(try fixture.sync(configuration).get().counts.inserted == 35)
    }

    @Test func clientCredentials_needNoPerson() throws {
        let fixture = try Fixture(serverArguments: [], keys: "oauth2-grant = client-credentials")
        defer { fixture.stop() }
        // The fixture's device URL has no effect here and is refused; drop it.
        let text = try String(contentsOfFile: fixture.configurationPath, encoding: .utf8)
            .split(separator: "\n").filter { !$0.hasPrefix("oauth2-device-url") }.joined(separator: "\n")
        try text.write(toFile: fixture.configurationPath, atomically: true, encoding: .utf8)
        let configuration = try fixture.load()
        #expect(try fixture.sync(configuration).get().counts.inserted == 35)
        #expect(try (fixture.state()["grants"] as? [String: Int]) == ["client_credentials": 1])
        #expect(try DeviceAuthorization(store: "things", configuration: configuration, databasePath: fixture.database).run { _ in } == .clientWorks)
        #expect(!FileManager.default.fileExists(atPath: fixture.tokenFile))
    }

    @Test func ferryAuth_savesTheDeviceFlowsRefreshToken_whichTheNextPassUses() throws {
        // No refresh token configured: only ferry auth can provide one.
        let fixture = try Fixture(serverArguments: ["--rotate"], keys: "oauth2-scope = read")
        defer { fixture.stop() }
        let configuration = try fixture.load()
        guard case .failure(let missing) = try fixture.sync(configuration) else {
            Issue.record("a pass without any refresh token succeeded")
            return
        }
        #expect(missing.kind == .unauthorized && missing.description.contains("there is no refresh token: authorise again with: ferry auth things"))

        try fixture.configure(#"{"approve_after": 2}"#)
        var prompts: [DeviceAuthorization.Prompt] = []
        let outcome = try DeviceAuthorization(store: "things", configuration: configuration, databasePath: fixture.database).run { prompts.append($0) }
        #expect(outcome == .saved(path: fixture.tokenFile))
        #expect(prompts.count == 1 && prompts.first?.verificationURI == fixture.server.baseURL + "/activate")
        #expect(try (fixture.state()["grants"] as? [String: Int])?["urn:ietf:params:oauth:grant-type:device_code"] == 2)
        #expect(try fixture.sync(configuration).get().counts.inserted == 35)

        // Denied, and expired: exit 77 with words that say so.
        try fixture.configure(#"{"approve_after": 0, "device_expires": 1}"#)
        do {
            _ = try DeviceAuthorization(store: "things", configuration: configuration, databasePath: fixture.database).run { _ in }
            Issue.record("an expired code was saved")
        } catch {
            #expect(error.exitCode == .permission && "\(error)".contains("expired"))
        }
        try fixture.configure(#"{"device_expires": 600}"#)
        let server = fixture.server
        do {
            _ = try DeviceAuthorization(store: "things", configuration: configuration, databasePath: fixture.database).run { prompt in
                _ = try? server.control("/admin/approve", method: "POST", body: #"{"user_code": "\#(prompt.userCode)", "deny": true}"#)
            }
            Issue.record("a denied authorisation was saved")
        } catch {
            #expect(error.exitCode == .permission && "\(error)" == "the authorisation was denied")
        }

        // A server that quotes the device code back in its refusal: the code is a secret
        // fetched at run time, redacted like the configured ones.
        try fixture.configure(#"{"quote_device_code": true}"#)
        do {
            _ = try DeviceAuthorization(store: "things", configuration: configuration, databasePath: fixture.database).run { _ in }
            Issue.record("a refused poll was saved")
        } catch {
            let code = try #require(try fixture.state()["last_device_code"] as? String)
            #expect(code.count >= 8)
            #expect(!"\(error)".contains(code) && "\(error)".contains("is not valid here"), "\(error)")
        }
    }

    @Test func aNewRefreshTokenInTheConfiguration_winsOverTheSavedOne() throws {
        let fixture = try Fixture()
        defer { fixture.stop() }
        let configuration = try fixture.load()
        _ = try fixture.sync(configuration).get()
        let saved = try #require(try fixture.savedRefreshToken())
        // Everything revoked; the admin re-authorises by other means and puts the new token
        // where oauth2-refresh-token points. The saved token descends from the old configured
        // one, so it yields: the pass after the reload sends the new one.
        _ = try fixture.server.control("/admin/revoke", method: "POST", body: "{}")
        let answer = try JSONSerialization.jsonObject(with: try fixture.server.control("/admin/issue", method: "POST", body: "{}"))
        let issued = try #require((answer as? [String: String])?["refresh_token"])
        try issued.write(toFile: fixture.directory.path("credentials/refresh"), atomically: true, encoding: .utf8)
        chmod(fixture.directory.path("credentials/refresh"), 0o600)
        let reloaded = try fixture.load()
        #expect(try fixture.sync(reloaded).get().isComplete)
        #expect(try (fixture.state()["presented"] as? [String])?.last == issued)
        let rotated = try #require(try fixture.savedRefreshToken())
        #expect(rotated != saved && rotated != issued)
    }

    /// `ferry sync` killed at random instants, 40 times, against a server that rotates refresh
    /// tokens and lets the old one live only until its successor is first used (Okta's and
    /// Auth0's reuse interval): a client that ever used a token it had not saved first would
    /// be locked out after one of these kills. The saved file is whole after every kill, and
    /// the run after them succeeds.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: OAuth2ServerTests.ferry), "ferry not built (swift build)"))
    func killedAtAnyInstant_ferryIsNeverLockedOut() throws {
        let fixture = try Fixture()
        defer { fixture.stop() }
        try fixture.configure(#"{"grace": true}"#)
        var generator = SeededGenerator(seed: UInt64(ProcessInfo.processInfo.processIdentifier))
        let grant = try #require(try fixture.load().stores.first?.oauth2)
        let file = RefreshTokenFile(databasePath: fixture.database, store: "things")
        func run(killAfter delay: UInt32?) throws -> Int32 {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: Self.ferry)
            process.arguments = ["sync", "-c", fixture.configurationPath]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            if let delay {
                usleep(delay)
                kill(process.processIdentifier, SIGKILL)
            }
            process.waitUntilExit()
            return process.terminationStatus
        }
        // Kills land anywhere in a whole run, however slow the machine: from its start to its
        // end as one unkilled run measured it.
        let started = ContinuousClock.now
        #expect(try run(killAfter: nil) == 0)
        let whole = UInt64(max(1, (ContinuousClock.now - started).seconds * 1_000_000))
        for _ in 0..<40 {
            _ = try run(killAfter: UInt32(generator.next() % whole))
            if case .failure(let error) = file.load(for: grant) { Issue.record("after a kill: \(error)") }
        }
        #expect(try run(killAfter: nil) == 0)
        let presented = try (fixture.state()["presented"] as? [String]) ?? []
        #expect(try fixture.count("reused") == 0, "\(presented.count) refreshes")
    }

    static let ferry = TestServer.repositoryRoot.appendingPathComponent(".build/debug/ferry").path
}
