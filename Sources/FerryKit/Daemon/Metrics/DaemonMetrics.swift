import Foundation
import Synchronization

/// ferryd's figures for Prometheus: what each store's passes did (counters since the process
/// started, as Prometheus expects of counters), how each store stands now (gauges), and the
/// process and replica file (gauges).
///
/// The daemon's main thread records (``passFinished(_:outcome:schedule:at:)``,
/// ``refresh(_:)`` and ``retain(stores:)``); the metrics listener's thread renders (``render(at:)``). One lock
/// keeps them apart; recording costs a dictionary update per pass, so it scales with passes,
/// not with stores, and rendering scales with stores only when somebody scrapes.
///
/// Names and units follow Prometheus's conventions (`_total` counters, `_seconds`, `_bytes`,
/// `_timestamp_seconds`); every per-store family has the label `store`.
public final class DaemonMetrics: Sendable {
    /// How a finished pass ended, as the `outcome` label says it.
    public enum Outcome: String, CaseIterable, Sendable {
        /// Succeeded, and the replica equals the remote.
        case ok
        /// Succeeded, but the replica knowingly differs (``ReplicaGap``).
        case incomplete
        case failed
        /// Cancelled by a reload, a stop, or as stuck.
        case cancelled
    }

    /// A store's standing, as `ferry_store_state{state=...}` says it.
    enum Standing: String, CaseIterable {
        case ok, incomplete, failing
        case neverSynced = "never_synced"
    }

    /// When the scheduler runs a store next, and how it has been failing.
    public struct Schedule: Sendable, Equatable {
        public var nextPass: Date?
        public var consecutiveFailures: Int

        public init(nextPass: Date?, consecutiveFailures: Int) {
            self.nextPass = nextPass
            self.consecutiveFailures = consecutiveFailures
        }
    }

    /// What the process is doing, from the scheduler's snapshot.
    public struct Activity: Sendable, Equatable {
        public var running = 0
        /// Passes due that wait for a free slot.
        public var waiting = 0

        public init(running: Int = 0, waiting: Int = 0) {
            self.running = running
            self.waiting = waiting
        }
    }

    /// Upper bounds of the pass-duration histogram: a no-change pass takes milliseconds, a
    /// first sync of a large store minutes.
    static let durationBounds: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900]

    /// Upper bounds of the start-delay histogram: a scheduled pass should start within a
    /// second or two of its time; minutes mean the daemon cannot keep up.
    static let startDelayBounds: [Double] = [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300]

    struct StoreFigures {
        let tally = TransferTally()
        var passes: [Outcome: UInt64] = [:]
        var inserted: UInt64 = 0
        var updated: UInt64 = 0
        var deleted: UInt64 = 0
        var skipped: UInt64 = 0
        var pushed: UInt64 = 0
        var pushRefused: UInt64 = 0
        var conflicts: UInt64 = 0
        var duration = PrometheusExposition.Histogram(bounds: DaemonMetrics.durationBounds)
        var lastSuccess: Date?
        var lastPass: Date?
        var records: Int?
        var localQueued = 0
        var localHeld = 0
        var localRefused = 0
        var standing = Standing.neverSynced
        var schedule = Schedule(nextPass: nil, consecutiveFailures: 0)
        /// Notifications received, by result (triggered, handshake, or why refused).
        var notifications: [String: UInt64] = [:]
    }

    private struct State {
        var stores: [String: StoreFigures] = [:]
        var activity = Activity()
        /// By trigger, for the whole process: per store it would be thousands of series.
        var startDelay: [PassTrigger: PrometheusExposition.Histogram] = [:]
        /// Requests the listeners turned away before a route, by why.
        var listenerRefused: [ListenerRefusal: UInt64] = [:]
        /// Stores the configuration names but leaves out for problems of their own sections.
        var refused: Set<String> = []
    }

    private let state = Mutex(State())
    private let databasePath: String
    private let version: String
    private let started: Date

    public init(databasePath: String, version: String = FerryVersion.current, started: Date = Date()) {
        self.databasePath = databasePath
        self.version = version
        self.started = started
    }

    /// The tally a pass of `store` adds its requests and bytes to.
    public func tally(for store: String) -> TransferTally {
        state.withLock { state in
            if let figures = state.stores[store] { return figures.tally }
            let figures = StoreFigures()
            state.stores[store] = figures
            return figures.tally
        }
    }

    /// Starts each configured store (``retain(stores:)``) from what the replica recorded
    /// before this process (its last success, records, local changes), so a restart does not
    /// blank the gauges an alert reads until every store has run a pass.
    public func seed(from states: [SyncState]) {
        state.withLock { state in
            for recorded in states {
                guard var figures = state.stores[recorded.store] else { continue }
                figures.lastSuccess = recorded.lastSuccess
                figures.lastPass = recorded.lastAttempt
                figures.records = recorded.lastSuccess == nil ? nil : recorded.recordCount
                figures.localQueued = recorded.localWritesQueued
                figures.localRefused = recorded.localWritesRefused
                figures.localHeld = recorded.openConflicts
                figures.standing = recorded.lastSuccess == nil ? .neverSynced
                    : recorded.lastError != nil ? .failing : recorded.incomplete != nil ? .incomplete : .ok
                state.stores[recorded.store] = figures
            }
        }
    }

    /// Counts a finished pass and takes the store's schedule after it.
    public func passFinished(_ store: String, outcome: Result<PassReport, SyncError>, schedule: Schedule, at date: Date = Date()) {
        state.withLock { state in
            // A store a reload removed while its pass ran is no longer reported.
            guard var figures = state.stores[store] else { return }
            figures.schedule = schedule
            switch outcome {
            case .success(let report):
                let ended: Outcome = report.isComplete ? .ok : .incomplete
                figures.passes[ended, default: 0] += 1
                figures.inserted += UInt64(report.counts.inserted)
                figures.updated += UInt64(report.counts.updated)
                figures.deleted += UInt64(report.counts.deleted)
                figures.skipped += UInt64(report.counts.skipped)
                figures.pushed += UInt64(report.push.pushed)
                figures.pushRefused += UInt64(report.push.refused)
                figures.conflicts += UInt64(report.counts.conflicts + report.push.conflicts)
                figures.duration.observe(report.duration.seconds)
                figures.lastPass = date
                if report.pulled {
                    figures.lastSuccess = date
                    figures.records = report.recordCount
                }
                figures.localQueued = report.localQueued
                figures.localHeld = 0
                figures.localRefused = 0
                for case .localChangesNotPushed(_, let held, let refused, _) in report.gaps {
                    figures.localHeld = held
                    figures.localRefused = refused
                }
                figures.standing = report.isComplete ? .ok : .incomplete
            // A pass that found another process syncing the store did nothing, as a cancelled
            // one: neither says anything about the store.
            case .failure(let error) where error.kind == .cancelled || error.kind == .busy:
                figures.passes[.cancelled, default: 0] += 1
            case .failure:
                figures.passes[.failed, default: 0] += 1
                figures.lastPass = date
                figures.standing = .failing
            }
            state.stores[store] = figures
        }
    }

    /// A pass began running `delay` after the instant it was due (its interval's end, a
    /// retry's, or when it was asked for), having waited for a free slot or a busy daemon.
    public func passStarted(trigger: PassTrigger, delay: Duration) {
        state.withLock { state in
            state.startDelay[trigger, default: PrometheusExposition.Histogram(bounds: Self.startDelayBounds)].observe(max(0, delay.seconds))
        }
    }

    /// Takes what the scheduler says now (each pass's end, and every few seconds).
    public func refresh(_ activity: Activity) {
        state.withLock { $0.activity = activity }
    }

    /// The configured stores (at start and at each reload): others are forgotten, new ones
    /// start at zero.
    public func retain(stores: Set<String>) {
        state.withLock { state in
            for name in state.stores.keys where !stores.contains(name) { state.stores[name] = nil }
            for name in stores where state.stores[name] == nil { state.stores[name] = StoreFigures() }
        }
    }

    /// A request to a store's notification path, by what it came to: `triggered`,
    /// `handshake`, or the refusal (``NotificationRefusal``).
    public func notificationReceived(_ store: String, result: String) {
        state.withLock { state in
            // Only configured stores have figures: a path naming no store is a listener refusal.
            state.stores[store]?.notifications[result, default: 0] += 1
        }
    }

    /// A request a listener turned away before any route (``ListenerRefusal``).
    public func listenerRefused(_ refusal: ListenerRefusal) {
        state.withLock { $0.listenerRefused[refusal, default: 0] += 1 }
    }

    /// The stores left out of the running configuration for problems of their own sections
    /// (``RefusedStore``), at start and at each reload: `ferry_store_refused` names them.
    public func refuse(stores: Set<String>) {
        state.withLock { $0.refused = stores }
    }

    /// The exposition a scrape answers with.
    public func render(at now: Date = Date()) -> String {
        let (stores, activity, startDelay, listenerRefused, refusedStores) = state.withLock { state in
            (state.stores.sorted { $0.key < $1.key }, state.activity, state.startDelay, state.listenerRefused, state.refused.sorted())
        }
        var out = PrometheusExposition()
        out.family("ferry_build_info", .gauge, help: "Ferry's version; always 1.") { $0.add([("version", version)], 1) }
        out.family("ferry_start_time_seconds", .gauge, help: "When ferryd started, in seconds since the Unix epoch.") {
            $0.add([], started.timeIntervalSince1970)
        }
        out.family("ferry_stores", .gauge, help: "Stores in the running configuration.") { $0.add([], Double(stores.count)) }
        out.family("ferry_store_refused", .gauge,
                   help: "1 for each store the configuration names but ferryd does not sync, for problems in its own section (ferry check-config lists them).") { samples in
            for name in refusedStores { samples.add([("store", name)], 1) }
        }
        out.family("ferry_passes_running", .gauge, help: "Passes running now.") { $0.add([], Double(activity.running)) }
        out.family("ferry_passes_waiting", .gauge, help: "Passes due and waiting for a free slot.") { $0.add([], Double(activity.waiting)) }
        out.family("ferry_pass_start_delay_seconds", .histogram,
                   help: "How long after it was due each pass started, by trigger (scheduled, notification, on-demand, backfill).") { samples in
            for trigger in [PassTrigger.scheduled, .notified, .onDemand, .backfill] {
                if let histogram = startDelay[trigger] { samples.histogram([("trigger", trigger.rawValue)], histogram) }
            }
        }
        out.family("ferry_listener_refused_total", .counter,
                   help: "Requests ferryd's listeners turned away before reading them as a route, by reason.") { samples in
            for refusal in ListenerRefusal.allCases { samples.add([("reason", refusal.rawValue)], Double(listenerRefused[refusal] ?? 0)) }
        }
        let replica = Self.fileSize(databasePath)
        let wal = Self.fileSize(databasePath + "-wal")
        out.family("ferry_replica_size_bytes", .gauge, help: "Size of the replica's database file.") { samples in
            if let replica { samples.add([], Double(replica)) }
        }
        out.family("ferry_replica_wal_size_bytes", .gauge, help: "Size of the replica's write-ahead log (0 when there is none).") { samples in
            if replica != nil { samples.add([], Double(wal ?? 0)) }
        }

        Self.renderStoreFamilies(stores, into: &out)
        return out.text
    }

    private static func fileSize(_ path: String) -> Int64? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Int64(info.st_size)
    }
}
