import Foundation
import Logging

/// What the listeners ask of the daemon's thread: a pass of a store a verified notification
/// named, or one a person asked for through the control socket.
extension Daemon {
    /// A verified notification: the store's pass now, coalesced with any already due or running.
    func notified(_ store: String) {
        guard case .running(let scheduler) = state else { return }
        let outcome = scheduler.notified(store)
        logger.debug("store \(store): change notification; pass \(outcome.rawValue)", metadata: ["store": "\(store)"])
    }

    /// `ferry sync --now STORE`: answered when the pass it asked for has ended.
    func passRequested(_ store: String, respond: @escaping @Sendable (ListenerAnswer) -> Void) {
        respond(ListenerAnswer(501, "not yet\n"))
    }
}
