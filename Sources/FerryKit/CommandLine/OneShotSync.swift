import Dispatch
import Foundation
import Logging

/// `ferry sync`: one pass of each chosen store in the foreground, without the daemon, with
/// the same pass operation, merge engine and database the daemon uses.
public final class OneShotSync {
    /// One store's pass as the progress display sees it.
    public struct Progress: Sendable {
        public var store: String
        public var progress: OperationProgress
        public var isRunning: Bool
        public var isFinished: Bool
        public var isCancelled: Bool
        /// The pass ended with a failure (its bar must not say done).
        public var isFailed = false
        /// Rate limited, and passed again once this is over: the bar counts it down instead
        /// of saying failed.
        public var retryIn: Duration?
        /// How long this store's pass has run (or ran): its own time, not the command's, so
        /// its rate is records over the time it took.
        public var elapsed: Duration
    }

    private let stores: [StoreConfiguration]
    private let configuration: FerryConfiguration
    private let database: SharedDatabase
    private let maxConcurrentPasses: Int
    private let logger: Logger
    /// Sweep deleted ids whatever the replica's last sweep (`ferry sync --sweep`).
    public var sweepNow = false
    /// Pull after pushing; false for `ferry push`.
    public var pull = true
    /// Rebuild every store passed (`ferry resync`, ``SyncPassOperation/Setup/resync``).
    public var resync = false
    /// How long a pass waits for another process syncing its store (ferryd mid-pass, another
    /// `ferry sync`) before it gives up with ``FerryExitCode/busy``.
    public var claimWait: Duration = .seconds(60)
    /// How long, in all, the command waits for servers that answer "rate limited, retry after
    /// N s" before passing their stores again (rclone's way); a longer wait fails the pass and
    /// says when to retry.
    public var rateLimitWait: Duration = .seconds(60)

    /// Picks the stores to sync (all when `storeNames` is empty) and opens the database;
    /// an unknown store name is a usage error naming the known ones. A replica larger than
    /// `deferIntegrityCheckAbove` bytes is checked beside the passes rather than before them.
    public init(configuration: FerryConfiguration, storeNames: [String], databasePath: String? = nil,
                deferIntegrityCheckAbove: Int64 = ReplicaDatabase.integrityCheckedBeforeUseUpTo, logger: Logger) throws {
        guard !configuration.stores.isEmpty else { throw OneShotSyncError.noStores }
        database = try SharedDatabase(path: databasePath ?? configuration.global.databasePath,
                                      deferIntegrityCheckAbove: deferIntegrityCheckAbove)
        // Refresh tokens are kept beside the replica this run uses, named by --database or not.
        let configuration = configuration.authorizing(databasePath: database.path)
        // A member of an expanding store (a dav-account's collection) may be named on its own.
        let expanded = configuration.expandingMembers(try database.write { database throws(StoreError) in try database.expandedMembers() })
        var selected: [StoreConfiguration] = []
        for name in storeNames {
            guard let store = expanded.store(named: name) else {
                database.close()
                throw OneShotSyncError.unknownStore(name, known: expanded.stores.map(\.name).joined(separator: ", "))
            }
            selected.append(store)
        }
        stores = storeNames.isEmpty ? configuration.stores : selected
        self.configuration = configuration
        maxConcurrentPasses = configuration.global.maxConcurrentPasses
        self.logger = logger
    }

    /// Runs the passes of the chosen expanding stores (a `dav-account` store's discovery: which
    /// collections there are) before any other pass, and returns their results, the stores to
    /// pass (the others chosen and every member of those stores, as the replica now records
    /// them) and each member's sync-token as its store just listed it. `ferry push` runs no
    /// expanding pass and pushes the members already known.
    private func settleExpandingStores() -> (results: [(store: String, result: Result<PassReport, SyncError>)], stores: [StoreConfiguration], tokens: [String: String]) {
        let expanding = stores.filter(\.expands)
        guard !expanding.isEmpty else { return ([], stores, [:]) }
        var results: [(store: String, result: Result<PassReport, SyncError>)] = []
        var tokens: [String: String] = [:]
        if pull {
            let names = Set(configuration.stores.map(\.name))
            let operations = expanding.enumerated().map { index, store in
                var order = PassOrder(store: store, database: database, trigger: .onDemand, number: index + 1, logger: logger)
                order.otherStores = names.subtracting([store.name])
                order.claimWait = claimWait
                return order.makeOperation()
            }
            let queue = OperationQueue()
            queue.maxConcurrentOperationCount = maxConcurrentPasses
            queue.addOperations(operations, waitUntilFinished: true)
            results = zip(expanding, operations).map { store, operation in
                let name = store.name
                if case .success(let report)? = operation.result { tokens.merge(report.collectionTokens) { _, new in new } }
                return (name, operation.result ?? .failure(SyncError(.cancelled, store: name, message: "the pass ended without a result")))
            }
        }
        let known = (try? database.write { database throws(StoreError) in try database.expandedMembers() }) ?? []
        let expanded = configuration.expandingMembers(known)
        let expandingNames = Set(expanding.map(\.name))
        var passing = stores.filter { !$0.expands }
        for member in known where expandingNames.contains(member.expandingStore) && !passing.contains(where: { $0.name == member.store }) {
            if let store = expanded.store(named: member.store) { passing.append(store) }
        }
        return (results, passing, tokens)
    }

    public var databasePath: String { database.path }

    /// Runs one pass per store (sweeping deleted records too when the store's last sweep is a
    /// `reconcile-interval` old, or always with `sweepNow`; never with `reconcile-interval =
    /// never`) and returns each outcome in configuration order.
    /// `progress` is called on the calling thread about every `refresh`; SIGINT cancels every
    /// pass cleanly.
    public func run(refresh: Duration = .milliseconds(200), progress: ([Progress]) -> Void) -> [(store: String, result: Result<PassReport, SyncError>)] {
        let (expandingResults, stores, tokens) = settleExpandingStores()
        var results = passes(of: stores, tokens: tokens, refresh: refresh, progress: progress)
        // Rate limited with a wait the budget still covers: wait as the server asked, then pass
        // those stores again (their committed batches stay; the pass resumes from its cursor).
        var waited = Duration.zero
        while !interrupted {
            let limited = results.compactMap { result -> (store: String, after: Duration)? in
                guard case .failure(let error) = result.result, error.kind == .rateLimited, let after = error.retryAfter,
                      waited + after <= rateLimitWait else { return nil }
                return (result.store, after)
            }
            guard let delay = limited.map(\.after).max() else { break }
            for (store, _) in limited {
                logger.notice("store \(store): rate limited; the server asked to wait \(ConfigurationUnits.format(delay)): passing it again then (ferry sync waits up to \(ConfigurationUnits.format(rateLimitWait)) in all)")
            }
            // The bars count the wait down rather than saying failed.
            let until = ContinuousClock.now + delay
            while case let left = until - ContinuousClock.now, left > .zero {
                progress(lastProgress.map { item in
                    guard limited.contains(where: { $0.store == item.store }) else { return item }
                    var waiting = item
                    waiting.isFailed = false
                    waiting.retryIn = left
                    return waiting
                })
                Thread.sleep(forTimeInterval: min(left, refresh).seconds)
            }
            waited += delay
            let again = passes(of: stores.filter { store in limited.contains { $0.store == store.name } }, tokens: tokens, refresh: refresh, progress: progress)
            results = results.map { old in again.first { $0.store == old.store } ?? old }
        }
        database.close()
        return expandingResults + results
    }

    /// The progress of the last passes as last shown, for the bars of a rate-limit wait.
    private var lastProgress: [Progress] = []
    /// Set when SIGINT cancelled the passes: no retry follows.
    private var interrupted = false
    /// The deferred integrity check ran beside the first passes; a retry does not run it again.
    private var integrityChecked = false

    /// One pass of each store, in parallel up to `max-concurrent-passes`, as ``run(refresh:progress:)`` describes.
    private func passes(of stores: [StoreConfiguration], tokens: [String: String], refresh: Duration,
                        progress: ([Progress]) -> Void) -> [(store: String, result: Result<PassReport, SyncError>)] {
        let queue = OperationQueue()
        queue.name = "ferry-sync"
        queue.maxConcurrentOperationCount = maxConcurrentPasses
        let operations = stores.enumerated().map { index, store in
            var order = PassOrder(store: store, database: database, trigger: .onDemand, number: index + 1, logger: logger)
            order.reconcile = store.reconcileInterval != nil
            order.sweepInterval = sweepNow ? nil : store.reconcileInterval
            order.pull = pull
            order.currentToken = resync ? nil : tokens[store.name]
            order.resync = resync
            order.claimWait = claimWait
            return order.makeOperation()
        }
        let interrupt = cancelOnInterrupt(operations)
        // Each finished pass wakes the wait below, so the command returns as soon as the last
        // one is done, not at the next refresh.
        let finished = DispatchSemaphore(value: 0)
        for operation in operations {
            operation.completionBlock = { finished.signal() }
        }
        queue.addOperations(operations, waitUntilFinished: false)
        // A replica too large to check before use is checked beside the passes; damage cancels
        // them, and every store reports it.
        let checking = database.integrityCheckDeferred && !integrityChecked
        integrityChecked = true
        let integrity = IntegrityOutcome(done: !checking)
        if checking {
            database.checkIntegrityBeside { failure in
                integrity.set(failure)
                if failure != nil { operations.forEach { $0.cancel() } }
                finished.signal()
            }
        }
        // When each pass began and ended, as seen between refreshes.
        var began: [Int: ContinuousClock.Instant] = [:]
        var ended: [Int: ContinuousClock.Instant] = [:]
        func snapshot() -> [Progress] {
            let now = ContinuousClock.now
            return operations.enumerated().map { index, operation in
                if operation.isExecuting || operation.isFinished { began[index] = began[index] ?? now }
                if operation.isFinished { ended[index] = ended[index] ?? now }
                let elapsed = began[index].map { (ended[index] ?? now) - $0 } ?? .zero
                var item = Progress(store: stores[index].name, progress: operation.progress, isRunning: operation.isExecuting,
                                    isFinished: operation.isFinished, isCancelled: operation.isCancelled, elapsed: elapsed)
                if operation.isFinished, case .failure? = operation.result { item.isFailed = true }
                return item
            }
        }
        while !operations.allSatisfy(\.isFinished) || !integrity.state.done {
            progress(snapshot())
            _ = finished.wait(timeout: .now() + refresh.seconds)
        }
        lastProgress = snapshot()
        progress(lastProgress)
        interrupt.cancel()
        signal(SIGINT, SIG_DFL)
        if operations.contains(where: \.isCancelled) { interrupted = true }
        let damage = integrity.state.failure
        return zip(stores, operations).map { store, operation in
            let name = store.name
            if let damage { return (name, .failure(SyncError(damage, store: name))) }
            guard let result = operation.result else { preconditionFailure("\(operation) finished without a result") }
            return (name, result)
        }
    }

    private func cancelOnInterrupt(_ operations: [any PassOperation]) -> any DispatchSourceSignal {
        signal(SIGINT, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGINT, queue: DispatchQueue(label: "ferry-sync-signals"))
        source.setEventHandler {
            operations.forEach { $0.cancel() }
        }
        source.resume()
        return source
    }
}

/// The outcome of the integrity check that runs beside the passes, set once by its thread.
private final class IntegrityOutcome: @unchecked Sendable {
    private let lock = NSLock()
    private var value: (done: Bool, failure: StoreError?)

    init(done: Bool) { value = (done, nil) }

    var state: (done: Bool, failure: StoreError?) { lock.withLock { value } }

    func set(_ failure: StoreError?) { lock.withLock { value = (true, failure) } }
}

/// Why `ferry sync` could not start.
public enum OneShotSyncError: Error, CustomStringConvertible {
    case unknownStore(String, known: String)
    case noStores

    public var description: String {
        switch self {
        case .unknownStore(let name, let known): "no store named '\(name)' in the configuration (stores: \(known.isEmpty ? "none" : known))"
        case .noStores: "the configuration has no [store NAME] section: nothing to sync"
        }
    }
}
