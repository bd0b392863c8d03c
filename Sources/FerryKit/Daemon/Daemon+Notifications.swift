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

    /// `ferry sync --now STORE`: a pass of the store now (on-demand, coalesced like a
    /// notification), answered when a pass that began after the request has ended.
    func passRequested(_ store: String, respond: @escaping @Sendable (ListenerAnswer) -> Void) {
        guard case .running(let scheduler) = state else {
            return respond(PassAnswer.refusal(503, "ferryd is stopping; the pass was not run", code: .interrupted))
        }
        guard passWaiters.count < listeners.limits.maxPending else {
            return respond(PassAnswer.refusal(503, "ferryd has \(passWaiters.count) pass requests waiting; try again when they have ended", code: .busy))
        }
        let running = scheduler.isRunning(store)
        switch scheduler.requested(store) {
        case .unknown:
            respond(PassAnswer.refusal(404, "ferryd has no store \(store.debugDescription) (ferry status lists them)", code: .usage))
        case .due, .coalesced, .queuedAfterRunning, .backingOff:
            logger.info("store \(store): pass requested through the control socket", metadata: ["store": "\(store)"])
            passWaiters.add(respond, for: store, skip: running ? 1 : 0)
        }
    }

    /// A pass ended: the requests it answers.
    func answerPassWaiters(_ store: String, _ outcome: Result<PassReport, SyncError>) {
        let waiting = passWaiters.passEnded(store)
        guard !waiting.isEmpty else { return }
        let answer = PassAnswer.answer(outcome)
        for respond in waiting { respond(answer) }
    }

    /// After a reload: requests for stores it removed end, since no pass of theirs will.
    func forgetPassWaiters(keeping stores: Set<String>) {
        for store in passWaiters.stores where !stores.contains(store) {
            for respond in passWaiters.removeAll(of: store) {
                respond(PassAnswer.refusal(404, "store \(store) was removed from the configuration; no pass ran", code: .usage))
            }
        }
    }
}
