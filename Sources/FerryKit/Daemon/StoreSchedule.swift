import Foundation

/// The scheduler's view of one store: when it is due, how it has been failing, and its
/// running pass. Owned by the scheduler on its thread.
///
/// A class: the scheduler reads every store's schedule for STATUS= and `ferry status`, and
/// copying a struct holding a configuration and a pass report retains each of their fields
/// (with 5,000 stores, most of ferryd's CPU).
final class StoreSchedule {
    var configuration: StoreConfiguration
    var nextDue: ContinuousClock.Instant
    /// Why the next pass will run.
    var trigger: PassTrigger
    /// The earliest the remote allows another request (Retry-After, a rate-limit reset): no
    /// pass starts before it, not even one a reload or SIGHUP asks for.
    var notBefore: ContinuousClock.Instant?
    var consecutiveFailures = 0
    var lastError: SyncError?
    /// Live records after the last successful pass; nil before one. (Not the whole report:
    /// STATUS= reads this of every store, and copying a report out of the schedule costs
    /// more than everything else it reads.)
    var recordCount: Int?
    /// What the last finished pass left out (``ReplicaGap``); empty when the replica is whole.
    var gaps: [ReplicaGap] = []
    var lastFinished: ContinuousClock.Instant?
    /// When the last pass of this process with a complete sweep ran. Nil asks the next pass
    /// to sweep if the replica's own record says one is due (``SweepSchedule``).
    var lastReconcile: ContinuousClock.Instant?
    /// The store now names another remote: its next pass sweeps whatever the replica says.
    var sweepOwed = false
    var running: (any ScheduledPass)?
    /// The number of the running pass, to match its completion.
    var runningNumber: Int?
    /// When the running pass was due, and why it runs (its start delay is measured at its end).
    var runningDue: (instant: ContinuousClock.Instant, trigger: PassTrigger)?
    /// A pass was requested while one ran: run again as soon as it ends.
    var rerunRequested = false
    /// Why that pass runs: a person's request outranks a notification.
    var rerunTrigger = PassTrigger.onDemand
    /// When the running pass was cancelled for making no progress (its cancellation is then
    /// a failure, and a pass that ignores it for long is a wedged daemon).
    var cancelledAsStuck: ContinuousClock.Instant?
    /// A collection's sync-token from its account's discovery, for its next pass only.
    var discoveredToken: String?
    /// Bumped whenever the store's place in the scheduler's queues changes, so older queue
    /// entries are recognised as stale (``DueQueue``).
    var generation = 0

    init(configuration: StoreConfiguration, dueAt: ContinuousClock.Instant, trigger: PassTrigger) {
        self.configuration = configuration
        self.nextDue = dueAt
        self.trigger = trigger
    }

    var isFailing: Bool { consecutiveFailures > 0 }

    /// Whether the next pass should also sweep deleted records.
    func needsReconciliation(now: ContinuousClock.Instant) -> Bool {
        guard !configuration.kind.reportsDeletions, let interval = configuration.reconcileInterval else { return false }
        guard let lastReconcile else { return true }
        return now - lastReconcile >= interval
    }

    /// When the next pass may start: when due, and not before the remote allows.
    var startsAt: ContinuousClock.Instant {
        guard let notBefore else { return nextDue }
        return max(nextDue, notBefore)
    }

    /// Whether a configuration change makes the store another remote collection (its history
    /// of failures and Retry-After no longer applies), rather than the same one synced
    /// differently (another interval, priority or column).
    static func isSameRemote(_ old: StoreConfiguration, _ new: StoreConfiguration) -> Bool {
        old.kind == new.kind && old.url == new.url && old.options == new.options && old.headers == new.headers
            && old.session == new.session
    }
}

/// The order in which due stores start: on-demand before scheduled before backfill, then the
/// store's priority, then the longest waiting, then the name (so ties are stable).
struct ReadyKey: Comparable {
    var trigger: PassTrigger
    var priority: StorePriority
    var due: ContinuousClock.Instant
    var name: String

    static func < (lhs: ReadyKey, rhs: ReadyKey) -> Bool {
        if lhs.trigger != rhs.trigger { return lhs.trigger > rhs.trigger }
        if lhs.priority != rhs.priority { return lhs.priority > rhs.priority }
        if lhs.due != rhs.due { return lhs.due < rhs.due }
        return lhs.name < rhs.name
    }
}
