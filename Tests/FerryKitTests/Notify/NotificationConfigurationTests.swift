import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// `notify*` keys in a store and `notify-listen`, `notify-public-url` in `[ferry]`.
@Suite("Notification configuration")
struct NotificationConfigurationTests {
    /// A configuration of one JSON store with `lines` in it, and a secret file beside it.
    static func load(global: String = "", _ lines: String) throws -> Result<FerryConfiguration, ConfigurationErrors> {
        let directory = try TemporaryDirectory()
        let secret = directory.path("hook.secret")
        try "s3cret\n".write(toFile: secret, atomically: true, encoding: .utf8)
        chmod(secret, 0o600)
        let path = directory.path("ferry.conf")
        try """
            [ferry]
            database = \(directory.path("f.db"))
            \(global)

            [store orders]
            kind = json
            url = https://api.example.com/orders
            \(lines)

            """.write(toFile: path, atomically: true, encoding: .utf8)
        do {
            return .success(try ConfigurationLoader.load(path: path, environment: [:]))
        } catch {
            return .failure(error)
        }
    }

    static func problemKeys(_ result: Result<FerryConfiguration, ConfigurationErrors>) -> [String?] {
        guard case .failure(let errors) = result else { return [] }
        return errors.problems.map(\.key)
    }

    @Test func aStoreTakesNotificationsOnLoopbackByDefault() throws {
        let loaded = try Self.load("notify = stripe\nnotify-secret = file:hook.secret\nnotify-tolerance = 2m").get()
        let notify = try #require(loaded.stores.first?.notify)
        #expect(notify.scheme == .stripe)
        #expect(notify.secret.value == "s3cret")
        #expect(notify.tolerance == .seconds(120))
        #expect(loaded.global.notifyListen == GlobalConfiguration.defaultNotifyListen)
        #expect(loaded.global.notifyListen?.isLoopback == true)
        #expect(loaded.stores[0].secrets.contains(notify.secret), "the secret is kept out of errors like the store's others")
    }

    @Test func withoutNotifyNothingListens() throws {
        let loaded = try Self.load("").get()
        #expect(loaded.global.notifyListen == nil)
        #expect(loaded.stores[0].notify == nil)
    }

    @Test func anExposedListenerIsWarnedOf_andThePublicURLGivesEachStoresURL() throws {
        let loaded = try Self.load(global: "notify-listen = 0.0.0.0:9467\nnotify-public-url = https://sync.example.com/ferry/notify/",
                                   "notify = github\nnotify-secret = file:hook.secret").get()
        #expect(loaded.warnings.contains { $0.message.contains("notify-listen") })
        #expect(loaded.global.notifyURL(of: "orders") == "https://sync.example.com/ferry/notify/orders")
    }

    @Test(arguments: [
        ("notify = stripe", ["notify-secret"]),
        ("notify = strip\nnotify-secret = file:hook.secret", ["notify"]),
        ("notify-secret = file:hook.secret", ["notify-secret"]),
        ("notify = github\nnotify-secret = s3cret", ["notify-secret"]),
        ("notify = hmac-sha256\nnotify-secret = file:hook.secret", ["notify-header"]),
        ("notify = github\nnotify-secret = file:hook.secret\nnotify-header = X-Sig", ["notify-header"]),
        ("notify = google\nnotify-secret = file:hook.secret\nnotify-tolerance = 1m", ["notify-tolerance"]),
        ("notify = stripe\nnotify-secret = file:hook.secret\nnotify-tolerance = 2h", ["notify-tolerance"]),
        ("notify = hubspot\nnotify-secret = file:hook.secret", ["notify"]),
        ("notify = github\nnotify-secret = file:hook.secret\nnotify-secrets = x", ["notify-secrets"]),
    ])
    func badNotifyKeysAreProblemsNamingTheKey(_ lines: String, _ keys: [String]) throws {
        #expect(Self.problemKeys(try Self.load(lines)) == keys)
    }

    @Test func anInlineSecretIsNeverEchoed() throws {
        let result = try Self.load("notify = github\nnotify-secret = hunter2hunter2")
        guard case .failure(let errors) = result else { Issue.record("an inline secret was taken"); return }
        #expect(!"\(errors)".contains("hunter2"))
    }

    @Test func aMisspeltKeyIsToldTheNotifyKey() throws {
        guard case .failure(let errors) = try Self.load("notfy = github") else { Issue.record("loaded"); return }
        #expect(errors.problems.first?.message.contains("did you mean notify?") == true)
    }

    @Test func aBadPublicURLOrListenAddressIsAProblem() throws {
        #expect(Self.problemKeys(try Self.load(global: "notify-public-url = sync.example.com", "")) == ["notify-public-url"])
        #expect(Self.problemKeys(try Self.load(global: "notify-listen = localhost:9467", "")) == ["notify-listen"])
    }
}
