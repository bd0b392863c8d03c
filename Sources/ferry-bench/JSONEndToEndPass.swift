import ArgumentParser
import CSQLite
import FerryKit
import Foundation
import Logging
import Synchronization

/// `ferry-bench json-e2e-pass` (hidden): the child process `json-e2e` runs for part (c), so the
/// peak RSS it reports belongs to the pass alone and not to the parent that rendered a
/// million records and ran the baselines.
///
/// It syncs one JSON collection store into a fresh database through ``OneShotSync``, the code
/// `ferry sync` runs (SyncPassOperation → PullPhase → the store options' makeSource → JSONCollectionSource →
/// ReplicaDatabase.apply), and prints one machine-readable line:
/// `RESULT seconds=… inserted=… rows=… pages=… requests=… hwm_before_kb=… hwm_kb=… write_bytes=… read_bytes=…`.
struct JSONEndToEndPass: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "json-e2e-pass",
        abstract: "One `ferry sync`-style pass of a JSON collection into an empty store (used by json-e2e).",
        shouldDisplay: false
    )

    @Option(help: "The collection's first page.") var url: String
    @Option(help: "The replica database file (must not exist).") var database: String
    @Option(help: "How the pages chain (json-e2e's --pagination).") var pagination = StaticPagination.nextURL
    @Option(help: "Reconcile as `ferry sync` does (true) or not (false, a daemon pass between reconciliations).")
    var reconcile = true
    @Option(help: "Cap SQLite's heap (sqlite3_soft_heap_limit64, MB), to see the pass with a smaller page cache than bulk mode's 128 MB.")
    var sqliteHeapLimitMb: Int?
    @Flag(help: "Open the replica first as ferryd does and let its integrity check finish, then time the pass alone: a running daemon's scheduled pass, not a command that opens the file.")
    var opened = false
    @Flag(help: "With --opened: sweep by listing every id, as `ferry sync --sweep` does, even where the pages are those the last sweep listed.")
    var listEveryID = false
    @Flag(help: "With --opened: drop the replica's files from the page cache (fsync, then posix_fadvise DONTNEED; drop_caches as root if that leaves them cached) before the open and again after it, and time the pass from storage.")
    var evict = false
    @Flag(help: "Time the replica's integrity check alone (the quick_check ferryd and ferry sync run once a day), from storage with --evict, instead of a pass.")
    var integrityCheckOnly = false
    @Flag(help: "With --reconcile true: the sweep is due whenever the last one was (a reconcile-interval of 1 ms), to time ferryd's scheduled sweep again.")
    var sweepDue = false
    @Flag(help: "Run the source alone into a counting sink (fetch + parse, no store) instead of the pass.")
    var sourceOnly = false
    @Flag(help: "With --source-only: merge each batch with ReplicaDatabase.apply on the pass thread and time it.")
    var apply = false

    static let storeName = "e2e"

    func run() throws {
        var options = JSONCollectionOptions()
        options.recordsPath = "results"
        options.idField = "objectId"
        options.versionField = "updatedAt"
        pagination.configure(&options)
        options.totalPath = "count"
        var store = StoreConfiguration(name: Self.storeName, url: url, options: options,
                                       location: ConfigurationLocation(file: "json-e2e", line: 1))
        if !reconcile { store.reconcileInterval = nil } else if sweepDue { store.reconcileInterval = .milliseconds(1) }

        var global = GlobalConfiguration(databasePath: database, runtimeDirectory: NSTemporaryDirectory())
        global.maxConcurrentPasses = 1
        var logger = Logger(label: "ferry.bench")
        logger.logLevel = .warning
        if let sqliteHeapLimitMb { _ = sqlite3_soft_heap_limit64(Int64(sqliteHeapLimitMb) << 20) }
        let files = PageCache.replicaFiles(database)
        if integrityCheckOnly {
            let evicted = evict ? PageCache.evict(files) : nil
            let readBefore = PageCache.bytesRead()
            let checking = ContinuousClock.now
            try ReplicaDatabase.checkIntegrity(path: database)
            print("RESULT seconds=\((ContinuousClock.now - checking).seconds) read_bytes=\(PageCache.bytesRead() - readBefore)"
                  + (evicted.map { " evicted=\($0.method.rawValue) cached_before=\($0.cachedBefore) cached_after=\($0.cachedAfter)" } ?? ""))
            return
        }
        var openSeconds: Double?
        var openRead: Int64?
        var shared: SharedDatabase?
        if opened {
            // From storage too: what a start (or `ferry sync`) reads before any pass.
            if evict { _ = PageCache.evict(files) }
            let readBefore = PageCache.bytesRead()
            let opening = ContinuousClock.now
            shared = try Self.openAsDaemon(database)
            openSeconds = (ContinuousClock.now - opening).seconds
            openRead = PageCache.bytesRead() - readBefore
        }
        defer { shared?.close() }
        // A daemon's replica, its pages reclaimed since the last pass: the open (once per
        // start) read some of them back; the pass finds none cached.
        let evicted = evict && shared != nil ? PageCache.evict(files) : nil
        let hwmBefore = Self.peakRSSKilobytes()
        let cpuBefore = Self.processCPUSeconds()
        let writtenBefore = Self.bytesWritten()
        let readBefore = PageCache.bytesRead()
        let started = ContinuousClock.now
        let results: [(store: String, result: Result<PassReport, SyncError>)]
        if sourceOnly {
            var replica: ReplicaDatabase?
            if apply {
                let database = try ReplicaDatabase(path: database)
                try database.prepare(StoreDefinition(store))
                try database.setBulkMode(true)
                replica = database
            }
            let pass = CountingSourcePass(store: store, database: replica)
            OperationQueue().addOperations([pass], waitUntilFinished: true)
            let records = try pass.output()
            print("RESULT seconds=\((ContinuousClock.now - started).seconds) records=\(records) apply_seconds=\(pass.applySeconds) "
                  + "hwm_before_kb=\(hwmBefore) hwm_kb=\(Self.peakRSSKilobytes())")
            replica?.close()
            return
        } else if let shared {
            results = [(store.name, Self.scheduledPass(store, database: shared, reconcile: reconcile, listEveryID: listEveryID, logger: logger))]
        } else if reconcile {
            let sync = try OneShotSync(configuration: FerryConfiguration(global: global, stores: [store]), storeNames: [], logger: logger)
            results = sync.run(refresh: .milliseconds(100)) { _ in }
        } else {
            let shared = try SharedDatabase(path: database)
            defer { shared.close() }
            results = [(store.name, Self.scheduledPass(store, database: shared, reconcile: false, listEveryID: false, logger: logger))]
        }
        let seconds = (ContinuousClock.now - started).seconds
        let cpu = Self.processCPUSeconds() - cpuBefore
        let hwm = Self.peakRSSKilobytes()
        let read = PageCache.bytesRead() - readBefore
        guard let (_, result) = results.first else { throw ValidationError("no pass ran") }
        let report = try result.get()
        let sweep = switch report.reconciliation {
        case .swept?: "swept"
        case .refused?: "refused"
        case nil: "none"
        }
        print("RESULT seconds=\(seconds) inserted=\(report.counts.inserted) skipped=\(report.counts.skipped) rows=\(report.recordCount) "
              + "sweep=\(sweep) pages=\(report.pages) pages_unchanged=\(report.pagesUnchanged) requests=\(report.requests) cpu_seconds=\(cpu) "
              + "hwm_before_kb=\(hwmBefore) hwm_kb=\(hwm) write_bytes=\(Self.bytesWritten() - writtenBefore) read_bytes=\(read) "
              + "listing_unchanged=\(report.listingUnchanged)"
              + (openSeconds.map { " open_seconds=\($0)" } ?? "") + (openRead.map { " open_read_bytes=\($0)" } ?? "")
              + (evicted.map { " evicted=\($0.method.rawValue) cached_before=\($0.cachedBefore) cached_after=\($0.cachedAfter) replica_bytes=\($0.fileBytes)" } ?? ""))
    }

    /// Bytes this process caused to be written to storage (`write_bytes` of /proc/self/io:
    /// the database, its WAL and temporary files, counted when their pages are dirtied).
    static func bytesWritten() -> Int64 {
        guard let io = try? String(contentsOfFile: "/proc/self/io", encoding: .utf8),
              let line = io.split(separator: "\n").first(where: { $0.hasPrefix("write_bytes:") }),
              let value = Int64(line.split(separator: " ").last ?? "") else { return -1 }
        return value
    }

    /// The replica opened as ferryd opens it (a large file's integrity check deferred), with
    /// that check run beside and waited for: in a running daemon it finished long before.
    static func openAsDaemon(_ path: String) throws -> SharedDatabase {
        let database = try SharedDatabase(path: path, deferIntegrityCheckAbove: ReplicaDatabase.integrityCheckedBeforeUseUpTo)
        guard database.integrityCheckDeferred else { return database }
        let checked = DispatchSemaphore(value: 0)
        let failure = Mutex<StoreError?>(nil)
        database.checkIntegrityBeside { error in
            failure.withLock { $0 = error }
            checked.signal()
        }
        checked.wait()
        if let error = failure.withLock({ $0 }) {
            database.close()
            throw error
        }
        return database
    }

    /// The daemon's scheduled pass: the operation ferryd runs, sweeping when `reconcile` and
    /// the store's last sweep is a `reconcile-interval` old (a first sync sweeps nothing), or
    /// now and listing every id with `listEveryID` (`ferry sync --sweep`).
    static func scheduledPass(_ store: StoreConfiguration, database: SharedDatabase, reconcile: Bool, listEveryID: Bool,
                              logger: Logger) -> Result<PassReport, SyncError> {
        let operation = SyncPassOperation(.init(store: store, database: database, trigger: .onDemand, reconcile: reconcile,
                                                sweepInterval: listEveryID ? nil : store.reconcileInterval, pass: 1, logger: logger))
        OperationQueue().addOperations([operation], waitUntilFinished: true)
        // waitUntilFinished can return before the result is readable through every path; poll briefly.
        while !operation.isFinished { usleep(1000) }
        guard let result = operation.result else { preconditionFailure("the pass finished without a result") }
        return result
    }

    /// User + system CPU time of every thread of this process so far: on a loaded machine the
    /// wall time measures the neighbours as much as Ferry.
    static func processCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    /// VmHWM (peak resident set) of this process in kB, from /proc/self/status; -1 if unreadable.
    static func peakRSSKilobytes() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
              let value = Int(line.dropFirst("VmHWM:".count).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "")
        else { return -1 }
        return value
    }
}
