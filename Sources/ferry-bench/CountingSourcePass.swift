import FerryKit
import Foundation
import Logging

/// Runs one JSON collection pass (the source the store's options make) on its own
/// run loop into a sink that only counts, to split Ferry's end-to-end time into fetch + parse
/// and merge.
final class CountingSourcePass: RunLoopOperation<Int, SyncError>, RemoteSourceSink, @unchecked Sendable {
    private let store: StoreConfiguration
    private var source: (any RemoteSource)?
    private var records = 0
    /// When set, every batch is merged here (as SyncPassOperation does, minus its bookkeeping)
    /// and the time spent in `apply` is summed.
    private let database: ReplicaDatabase?
    private(set) var applySeconds = 0.0

    init(store: StoreConfiguration, database: ReplicaDatabase? = nil) {
        self.store = store
        self.database = database
        super.init(cancelled: .failure(SyncError(.cancelled, store: store.name, message: "pass cancelled")))
    }

    override func run() {
        do {
            let source = try store.options.value.makeSource(RemoteSourceContext(store: store, logger: Logger(label: "ferry.bench")))
            self.source = source
            source.start(PassPlan(cursor: nil, reconcile: false), sink: self)
        } catch {
            finish(.failure(error))
        }
    }

    override func cancelRun() {
        source?.cancel()
        super.cancelRun()
    }

    func source(_ source: any RemoteSource, didProduce batch: ChangeBatch) throws {
        records += batch.changes.count
        if let database {
            let start = ContinuousClock.now
            _ = try database.apply(batch, to: store.name)
            applySeconds += (ContinuousClock.now - start).seconds
        }
    }

    func source(_ source: any RemoteSource, didList ids: [String]) throws {}

    func source(_ source: any RemoteSource, didFinishWith outcome: SourceOutcome) {
        finish(.success(records))
    }

    func source(_ source: any RemoteSource, didFailWith error: SyncError) {
        finish(.failure(error))
    }
}
