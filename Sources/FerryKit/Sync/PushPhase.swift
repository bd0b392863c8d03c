import Foundation
import Logging

/// The push phase of a pass: the store's queued local changes sent by its kind's writer, in
/// rounds, every answer committed as it comes. It owns the writer sink, the rounds and the
/// push's counts; the pass operation starts it on its run loop and hears once how it ended.
///
/// Rounds: a round pushes up to ``changesPerPush`` changes. Another follows when the round
/// was full (more wait), or when conflicts queued changes again (local-wins, keep-both) or an
/// earlier send was found landed with a newer local write on top, at most ``pushRounds``
/// rounds of those, so a remote that keeps changing a record is left to the next pass rather
/// than chased.
final class PushPhase: RemoteWriterSink {
    private enum State {
        case idle
        case pushing(any RemoteWriter, round: Int)
        case done
    }

    static let pushRounds = 3
    static let changesPerPush = 5_000

    private let store: StoreConfiguration
    private let database: SharedDatabase
    private let journal: PassJournal
    /// Called on every answer recorded: the pass is advancing.
    private let onAdvance: () -> Void
    private var completion: ((Result<PushCounts, SyncError>) -> Void)?
    private var state = State.idle
    private(set) var counts = PushCounts()
    /// Changes queued again by this round's answers (rebased, copied, or found landed).
    private var requeued = 0

    init(store: StoreConfiguration, database: SharedDatabase, journal: PassJournal, onAdvance: @escaping () -> Void) {
        self.store = store
        self.database = database
        self.journal = journal
        self.onAdvance = onAdvance
    }

    /// Pushes `changes` (the first round, read by the pass with its resolutions carried out),
    /// then what else is queued; `completion` runs once, on this run loop.
    func start(_ changes: [LocalChange], completion: @escaping (Result<PushCounts, SyncError>) -> Void) {
        guard case .idle = state else { preconditionFailure("a push phase was started twice") }
        self.completion = completion
        journal.pushStarted(changes.count)
        round(changes, number: 1)
    }

    /// Stops the writer; the completion does not run.
    func cancel() {
        if case .pushing(let writer, _) = state { writer.cancel() }
        state = .done
        completion = nil
    }

    private func round(_ changes: [LocalChange], number: Int) {
        let writer: any RemoteWriter
        do {
            writer = try store.options.value.makeWriter(RemoteSourceContext(store: store, logger: journal.logger))
        } catch {
            return finish(.failure(error))
        }
        state = .pushing(writer, round: number)
        writer.start(changes, sink: self)
    }

    private func finish(_ result: Result<PushCounts, SyncError>) {
        if case .done = state { return }
        state = .done
        let completion = self.completion
        self.completion = nil
        completion?(result)
    }

    /// Runs a write for a sink call; a replica failure ends the phase and is rethrown, so the
    /// writer stops.
    private func write<T>(_ body: (ReplicaDatabase) throws(StoreError) -> T) throws(SyncError) -> T {
        do {
            return try database.write(body)
        } catch {
            let failure = SyncError(error, store: store.name)
            finish(.failure(failure))
            throw failure
        }
    }

    // MARK: - RemoteWriterSink

    func writer(_ writer: any RemoteWriter, willSendCreate change: LocalChange, body: String, remoteID: String?) throws -> Bool {
        guard case .pushing = state else { return false }
        return try write { database throws(StoreError) in
            try database.noteCreateSent(change, body: body, remoteID: remoteID, of: store.name, at: Date())
        }
    }

    func writer(_ writer: any RemoteWriter, willSendUpdates sends: [UpdateSend]) throws {
        guard case .pushing = state else { return }
        try write { database throws(StoreError) in try database.noteUpdatesSent(sends, of: store.name, at: Date()) }
    }

    func writer(_ writer: any RemoteWriter, didPush results: [(change: LocalChange, result: PushResult)]) throws {
        guard case .pushing = state else { return }
        // A server's words may echo a secret: redacted before they are stored or logged.
        let results = results.map { change, result in
            if case .refused(let reason) = result {
                (change: change, result: PushResult.refused(reason.redactingSecrets(store.secrets)))
            } else {
                (change: change, result: result)
            }
        }
        let resolutions = try write { database throws(StoreError) in
            try database.recordPushes(results, of: store.name, at: Date(), confirmingCreates: store.kind.reportsDeletions)
        }
        for ((change, result), resolution) in zip(results, resolutions) {
            if case .refused(let reason) = result {
                counts.refused += 1
                journal.pushRefused(change, reason: reason)
            } else if let resolution {
                counts.conflicts += 1
                if resolution == .rebaseLocal || resolution == .keepBoth { requeued += 1 }
                journal.conflict(change, resolution: resolution, policy: store.writeBack.conflict)
            } else if case .conflict = result {
                // Resolved as nothing to do (both sides deleted it).
            } else {
                counts.pushed += 1
                if case .acceptedEarlierSend = result { requeued += 1 }
            }
        }
        onAdvance()
    }

    func writer(_ writer: any RemoteWriter, didFinishWithRequests requests: Int) {
        guard case .pushing(_, let number) = state else { return }
        counts.requests += requests
        let again = requeued
        requeued = 0
        let attempted = counts.pushed + counts.conflicts + counts.refused
        // Another round: the last one was full (more may wait), or answers queued changes again.
        if attempted >= number * Self.changesPerPush || (again > 0 && number < Self.pushRounds) {
            let changes: [LocalChange]
            do {
                changes = try database.write { database throws(StoreError) in
                    try database.queuedLocalChanges(of: store.name, limit: Self.changesPerPush)
                }
            } catch {
                return finish(.failure(SyncError(error, store: store.name)))
            }
            if !changes.isEmpty { return round(changes, number: number + 1) }
        }
        journal.pushFinished(counts)
        finish(.success(counts))
    }

    func writer(_ writer: any RemoteWriter, didFailWith error: SyncError) {
        guard case .pushing = state else { return }
        finish(.failure(error))
    }
}
