import Foundation
import Synchronization

/// Which stores take notifications and how each is verified, as the running configuration
/// says; read by the listener's thread for every request, replaced by the daemon's on reload.
public final class NotificationDesk: Sendable {
    struct Entry: Sendable {
        var settings: NotificationConfiguration
        /// The URL the API calls for this store (`notify-public-url` + `/STORE`).
        var publicURL: String?
    }

    private let table = Mutex<[String: Entry]>([:])
    /// Per store, the stamps of the timestamped notifications it accepted; kept across a
    /// reload for the stores that still take notifications.
    private let replays = Mutex<[String: ReplayGuard]>([:])

    public init() {}

    /// Takes the stores of `configuration` that have `notify =`.
    public func configure(_ configuration: FerryConfiguration) {
        var entries: [String: Entry] = [:]
        for store in configuration.stores {
            guard let settings = store.notify else { continue }
            entries[store.name] = Entry(settings: settings, publicURL: configuration.global.notifyURL(of: store.name))
        }
        table.withLock { $0 = entries }
        replays.withLock { guards in guards = guards.filter { entries[$0.key] != nil } }
    }

    /// Whether `store` takes notifications.
    public func takes(_ store: String) -> Bool {
        table.withLock { $0[store] != nil }
    }

    /// The scheme `store` is verified by, if it takes notifications.
    public func scheme(of store: String) -> NotificationScheme? {
        table.withLock { $0[store]?.settings.scheme }
    }

    /// What a request to `store`'s path comes to: nil when the store takes no notifications
    /// (the listener answers 404, as for a path it does not know).
    public func verify(_ request: NotificationRequest, store: String, now: Date = Date()) -> NotificationVerdict? {
        guard let entry = table.withLock({ $0[store] }) else { return nil }
        let verdict = NotificationVerifier.verify(request, entry.settings, publicURL: entry.publicURL, now: now)
        // Only a verified request is remembered: a forgery must not fill the store's memory.
        guard verdict == .trigger, let stamp = NotificationVerifier.replayStamp(of: request, entry.settings, publicURL: entry.publicURL) else { return verdict }
        let new = replays.withLock { guards in guards[store, default: ReplayGuard()].admit(stamp, now: now) }
        return new ? verdict : .refused(.replayed)
    }

    /// The answer to a verdict. A refusal says only that it is one: why is for the journal
    /// and the metrics, not for whoever forged it.
    public static func answer(_ verdict: NotificationVerdict) -> ListenerAnswer {
        switch verdict {
        case .trigger: ListenerAnswer(202, "accepted: a pass is scheduled\n")
        case .handshake(let handshake): ListenerAnswer(handshake.status, handshake.body)
        case .refused(let refusal) where refusal.status == 401: ListenerAnswer(401, "unauthorized\n")
        case .refused: ListenerAnswer(403, "forbidden\n")
        }
    }
}
