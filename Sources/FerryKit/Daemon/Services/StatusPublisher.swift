import Foundation
import Logging

/// Shows how the daemon stands wherever people and programs read it: STATUS= (sent only when
/// the line changes), the schedule `ferry status` reads from the runtime directory (written
/// when it changed, at most once a second, and once a minute regardless, since a wall clock
/// set meanwhile moves every next pass as `ferry status` shows it), and the failures the
/// replica could not record (written only when they change).
///
/// Its outputs are closures, so tests see what it would send and write; ``live(notifier:runtimeDirectory:databasePath:logger:)``
/// makes the daemon's. A failing write is said once until it works again: syncing goes on.
final class StatusPublisher: DaemonService {
    /// Where each thing shown goes.
    struct Outputs {
        var status: (String) -> Void
        var schedule: ([String: PublishedSchedule.Entry]) throws -> Void
        var unrecordedFailures: ([String: UnrecordedFailures.Failure]) throws -> Void
        /// Takes the schedule away when the daemon stops: `ferry status` then shows none.
        var withdrawSchedule: () -> Void = {}
    }

    /// What a schedule is published from (the scheduler).
    protocol ScheduleSource: AnyObject {
        /// Grows whenever a store's next pass may have moved.
        var revision: Int { get }
        func publishedEntries(now date: Date) -> [String: PublishedSchedule.Entry]
    }

    var line: StatusLine
    /// Stores the configuration names but the daemon does not sync, for problems of their own
    /// sections (``RefusedStore``): published with the failures the replica does not hold,
    /// so `ferry status` (which reads no secret, and so cannot see a missing one) says they fail.
    var refused: [String: UnrecordedFailures.Failure] = [:]
    private let outputs: Outputs
    private let runtimeDirectory: String
    private let logger: Logger
    private(set) var lastStatus = ""
    private var publishedUnrecorded: [String: UnrecordedFailures.Failure] = [:]
    private var publishedSchedule: [String: PublishedSchedule.Entry]?
    private var schedulePublishedAt: ContinuousClock.Instant?
    private var publishedRevision = -1
    private var scheduleFailing = false
    private weak var host: (any DaemonServiceHost)?
    private var timers: [RepeatingTimer] = []

    /// Whether the refresh timers are armed.
    var isRefreshing: Bool { !timers.isEmpty }

    init(line: StatusLine, runtimeDirectory: String, outputs: Outputs, logger: Logger) {
        self.line = line
        self.runtimeDirectory = runtimeDirectory
        self.outputs = outputs
        self.logger = logger
    }

    /// The daemon's outputs: STATUS= through `notifier`, files in `runtimeDirectory`.
    static func live(notifier: SystemdNotifier, runtimeDirectory: String, databasePath: String, logger: Logger) -> StatusPublisher {
        let outputs = Outputs(
            status: { notifier.status($0) },
            schedule: { try PublishedSchedule(database: databasePath, stores: $0).publish(directory: runtimeDirectory) },
            unrecordedFailures: { try UnrecordedFailures(database: databasePath, stores: $0).publish(directory: runtimeDirectory) },
            withdrawSchedule: { PublishedSchedule.withdraw(directory: runtimeDirectory) })
        return StatusPublisher(line: StatusLine(databasePath: databasePath), runtimeDirectory: runtimeDirectory, outputs: outputs, logger: logger)
    }

    // MARK: - DaemonService

    /// The stores refused for problems of their own sections, failing from now.
    func configure(_ running: FerryConfiguration) {
        let now = Date()
        refused = Dictionary(running.refusedStores.map { ($0.name, UnrecordedFailures.Failure(at: now, message: "store \($0.name): \($0.summary)")) },
                             uniquingKeysWith: { first, _ in first })
    }

    /// Refreshes every five seconds; publishes the schedule a pass's end moved within a second.
    func start(_ host: any DaemonServiceHost) {
        self.host = host
        timers.append(RepeatingTimer(every: 5, tolerance: 1) { [weak self] in self?.host?.refreshStatus() })
        timers.append(RepeatingTimer(every: 1, tolerance: 0.2) { [weak self] in self?.tick() })
    }

    /// Publishes the schedule if it moved (once a second, from a timer).
    func tick() {
        guard let scheduler = host?.runningScheduler else { return }
        publishSchedule(of: scheduler)
    }

    /// Stops refreshing and takes the schedule away: no process keeps it true any more.
    func stop() {
        timers.forEach { $0.invalidate() }
        timers = []
        outputs.withdrawSchedule()
    }

    /// The line STATUS= would say now.
    func render(_ snapshot: Scheduler.Snapshot, now: ContinuousClock.Instant = .now) -> String {
        line.render(snapshot, now: now)
    }

    /// Sends STATUS= if its line changed, and publishes the unrecorded failures if they did.
    func publish(_ snapshot: Scheduler.Snapshot, now: ContinuousClock.Instant = .now) {
        let status = line.render(snapshot, now: now)
        if status != lastStatus {
            outputs.status(status)
            lastStatus = status
        }
        publishUnrecordedFailures(snapshot.unrecordedFailures.merging(refused) { _, refusal in refusal })
    }

    /// Publishes the schedule for `ferry status` if it changed, at most once a second.
    /// Building every store's entry costs milliseconds at 5,000 stores, so it is skipped
    /// while the source's revision stands still, except once a minute.
    func publishSchedule(of source: any ScheduleSource, now: ContinuousClock.Instant = .now, date: Date = Date()) {
        if let last = schedulePublishedAt {
            guard now - last >= .seconds(1) else { return }
            guard source.revision != publishedRevision || now - last >= .seconds(60) else { return }
        }
        publishedRevision = source.revision
        schedulePublishedAt = now
        let entries = source.publishedEntries(now: date)
        guard entries != publishedSchedule else { return }
        publishedSchedule = entries
        do {
            try outputs.schedule(entries)
            scheduleFailing = false
        } catch {
            if !scheduleFailing { logger.warning("cannot publish the schedule in \(runtimeDirectory): \(error); `ferry status` will not show next passes") }
            scheduleFailing = true
            // Tried again at the next chance, not only when the schedule changes.
            publishedSchedule = nil
        }
    }

    /// Keeps `ferry status` truthful while the replica cannot take the failures it should show.
    private func publishUnrecordedFailures(_ failures: [String: UnrecordedFailures.Failure]) {
        guard failures != publishedUnrecorded else { return }
        do {
            try outputs.unrecordedFailures(failures)
            for name in failures.keys.sorted() where publishedUnrecorded[name] == nil {
                logger.notice("store \(name): the replica could not record this failure; `ferry status` reads it from \(runtimeDirectory)/\(UnrecordedFailures.fileName)",
                              metadata: ["store": "\(name)"])
            }
            publishedUnrecorded = failures
        } catch {
            logger.warning("cannot publish failures the replica could not record in \(runtimeDirectory): \(error); `ferry status` may show them as ok")
        }
    }
}

extension Scheduler: StatusPublisher.ScheduleSource {}
