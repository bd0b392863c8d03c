import FerryKit
import Foundation
import Logging

/// What one benchmarked WebDAV pass produced.
struct DAVBenchmarkResult: Sendable {
    var records = 0
    var deletes = 0
    var bodyBytes = 0
    var cursor: String?
    var outcome: SourceOutcome?
    var error: SyncError?
}

/// Runs one ``WebDAVSource`` pass on its own run loop into a counting sink (the merge engine
/// is wired in by the owner later; this measures the source alone).
final class DAVBenchmarkPass: RunLoopOperation<DAVBenchmarkResult>, RemoteSourceSink, @unchecked Sendable {
    private let store: StoreConfiguration
    private let cursor: String?
    private var source: WebDAVSource?
    private var collected = DAVBenchmarkResult()

    init(store: StoreConfiguration, cursor: String?) {
        self.store = store
        self.cursor = cursor
        super.init()
    }

    override func run() {
        do {
            let source = try WebDAVSource(RemoteSourceContext(store: store, logger: Logger(label: "ferry.bench")))
            self.source = source
            source.start(PassPlan(cursor: cursor, reconcile: false), sink: self)
        } catch {
            collected.error = error
            finish(.success(collected))
        }
    }

    override func cancelRun() {
        source?.cancel()
        super.cancelRun()
    }

    func source(_ source: any RemoteSource, didProduce batch: ChangeBatch) throws {
        for change in batch.changes {
            switch change {
            case .upsert(let record):
                collected.records += 1
                collected.bodyBytes += record.body.count
            case .delete:
                collected.deletes += 1
            }
        }
        if let cursor = batch.cursor { collected.cursor = cursor }
    }

    func source(_ source: any RemoteSource, didList ids: [String]) throws {}

    func source(_ source: any RemoteSource, didFinishWith outcome: SourceOutcome) {
        collected.outcome = outcome
        finish(.success(collected))
    }

    func source(_ source: any RemoteSource, didFailWith error: SyncError) {
        collected.error = error
        finish(.success(collected))
    }

    /// Runs the pass and waits for it.
    func runToCompletion() throws -> DAVBenchmarkResult {
        let queue = OperationQueue()
        queue.addOperations([self], waitUntilFinished: true)
        return try output()
    }
}
