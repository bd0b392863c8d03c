import Logging

/// A pass as it is asked for, by ferryd's scheduler or by `ferry sync`, `push` and `resync`;
/// ``makeOperation()`` is the one place a pass's operation is made.
public struct PassOrder: Sendable {
    public var store: StoreConfiguration
    public var database: SharedDatabase
    public var trigger: PassTrigger
    /// The pass's number, for the journal.
    public var number: Int
    public var logger: Logger
    /// Whether the pass may sweep records deleted on the remote.
    public var reconcile = false
    /// How old the last sweep may be before this pass sweeps again (nil: sweep now).
    public var sweepInterval: Duration?
    /// A sync token just listed by the store's expanding store, to pass with.
    public var currentToken: String?
    /// Where the pass counts its transfers (ferryd's metrics).
    public var tally: TransferTally?
    /// Whether the pass pulls (`ferry push` only pushes).
    public var pull = true
    /// Whether the pass rebuilds the store from the remote (`ferry resync`).
    public var resync = false
    /// How long the pass waits while another process syncs the store (nil: not at all).
    public var claimWait: Duration?
    /// Every other configured store's name: an expanding store's members may take none.
    public var otherStores: Set<String> = []

    public init(store: StoreConfiguration, database: SharedDatabase, trigger: PassTrigger, number: Int, logger: Logger) {
        self.store = store
        self.database = database
        self.trigger = trigger
        self.number = number
        self.logger = logger
    }

    /// An expanding store's pass finds its members; any other store's pushes and pulls.
    public func makeOperation() -> any PassOperation {
        if let expanding = store.options.expanding {
            return expanding.makeExpansionPass(self)
        }
        var setup = SyncPassOperation.Setup(store: store, database: database, trigger: trigger, reconcile: reconcile,
                                            sweepInterval: sweepInterval, pass: number, logger: logger, pull: pull)
        setup.tally = tally
        setup.currentToken = currentToken
        setup.resync = resync
        setup.claimWait = claimWait
        return SyncPassOperation(setup)
    }
}

/// A pass's operation as its runners see it: an operation on a run loop of its own that ends
/// in a report, with what the scheduler watches (``ScheduledPass``).
public typealias PassOperation = RunLoopOperation<PassReport, SyncError> & ScheduledPass
