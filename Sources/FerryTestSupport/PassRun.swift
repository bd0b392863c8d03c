import FerryKit
import Logging
import Foundation

/// One pass through the real pass operation (``PassOrder/makeOperation()``), run to its end on
/// a queue of its own: what tests of a pass's whole behaviour (its pull, its push, its gaps, a
/// rebuild) share, instead of each queueing the operation and reading its result anew.
public enum PassRun {
    /// Why a pass ended with no report and no ``SyncError``: a bug in the pass.
    public struct UnexpectedEnd: Error, CustomStringConvertible {
        public var description: String
    }

    /// Runs `order`'s pass; cancels it after `cancelAfter` when given.
    public static func run(_ order: PassOrder, cancelAfter: Duration? = nil) throws -> Result<PassReport, SyncError> {
        let operation = order.makeOperation()
        let queue = OperationQueue()
        queue.addOperation(operation)
        if let cancelAfter {
            Thread.sleep(forTimeInterval: Double(cancelAfter.components.seconds) + Double(cancelAfter.components.attoseconds) / 1e18)
            operation.cancel()
        }
        queue.waitUntilAllOperationsAreFinished()
        // The queue lets go of an operation before its result is readable on every thread.
        while !operation.isFinished { usleep(1000) }
        guard let result = operation.result else { throw UnexpectedEnd(description: "the pass ended without a result") }
        return result
    }

    /// A pass of `store` into `database`, as ferryd's scheduler would start it.
    public static func run(_ store: StoreConfiguration, _ database: SharedDatabase, trigger: PassTrigger = .scheduled, reconcile: Bool = false,
                           sweepInterval: Duration? = nil, pull: Bool = true, resync: Bool = false, number: Int = 1,
                           cancelAfter: Duration? = nil) throws -> Result<PassReport, SyncError> {
        var order = PassOrder(store: store, database: database, trigger: trigger, number: number, logger: .init(label: "ferry.test"))
        order.reconcile = reconcile
        order.sweepInterval = sweepInterval
        order.pull = pull
        order.resync = resync
        return try run(order, cancelAfter: cancelAfter)
    }
}
