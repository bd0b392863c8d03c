import Foundation

/// The scheduler's view of one store: when it is due, how it has been failing, and its
/// running pass. Owned by the scheduler on the main thread.
struct StoreSchedule {
    var configuration: StoreConfiguration
    var nextDue: ContinuousClock.Instant
    /// Why the next pass will run.
    var trigger: PassTrigger
    var consecutiveFailures = 0
    var lastError: SyncError?
    var lastReport: PassReport?
    var lastFinished: ContinuousClock.Instant?
    /// When the last pass with a complete reconciliation ran; nil forces one.
    var lastReconcile: ContinuousClock.Instant?
    var running: SyncPassOperation?
    /// A pass was requested while one ran: run again as soon as it ends.
    var rerunRequested = false

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
}
