/// How a pull goes, decided from what the replica says about its store: a pure function whose
/// tests read as its table (as ``MergePlan`` and ``ConflictPlan``). The pass reads the facts
/// in one transaction, asks here, and carries the decision out; nothing here touches the
/// replica or the remote.
///
/// | facts                                              | mode                   | sweeps |
/// |----------------------------------------------------|------------------------|--------|
/// | `ferry resync`, or url/class/filter changed; rows  | rebuild, staged        | yes    |
/// | the same, no rows                                  | rebuild into empty     | no     |
/// | no cursor, no rows                                 | first sync, spooled    | no     |
/// | no cursor, rows (a cursor lost)                    | first sync over rows   | when a sweep is wanted |
/// | cursor                                             | incremental            | when a sweep is wanted |
///
/// A sweep is wanted when one is due by `reconcile-interval` (never for a kind whose changes
/// name their deletions, a DAV sync token), owed by an earlier pass that could not do it, or
/// needed to find records an earlier pass could not store on a kind that cannot fetch by id;
/// an empty table has nothing to sweep.
public enum PassPlanner {
    /// What the replica and the configuration say before a pull.
    public struct Facts: Sendable, Equatable {
        /// A person asked for a rebuild (`ferry resync`).
        public var resync = false
        /// The store's url, class or filter differ from those its rows were synced from.
        public var identityMoved = false
        /// A cursor is stored.
        public var hasCursor = false
        /// The table has rows (live or tombstones).
        public var hasRecords = false
        /// Ids an earlier pass could not store wait in `ferry_pending_records`.
        public var hasPendingRecords = false
        /// A sweep is due by the schedule (``SweepSchedule``).
        public var sweepDue = false
        /// An earlier pass owes a sweep (`sweep_pending`).
        public var sweepOwed = false
        /// The pass sweeps on a schedule (`reconcile-interval`), not because a person asked now.
        public var sweepScheduled = false
        /// The kind's changes name their deletions (a DAV sync token).
        public var reportsDeletions = false
        /// The kind can read a record by id.
        public var fetchesByID = false

        public init() {}
    }

    /// What the pull is.
    public enum Mode: Sendable, Equatable {
        /// From the stored cursor.
        case incremental
        /// Everything, from no cursor. `spooled`: into an empty table, its batches held and
        /// merged in id order (``SpooledFirstSync``).
        case firstSync(spooled: Bool)
        /// Everything again. `staged`: the table has rows, kept as they are while the new ones
        /// are set aside and switched in, in one transaction, at the end.
        case rebuild(staged: Bool)
    }

    /// What the pass does.
    public struct Decision: Sendable, Equatable {
        public var mode: Mode
        /// Lists every remote id and sweeps rows the remote no longer has.
        public var sweeps: Bool
        /// The ids waiting in `ferry_pending_records` are fetched by id with the changes (a
        /// kind that cannot fetch by id sweeps instead, reading everything).
        public var fetchesPending: Bool
        /// Page digests vouch for unchanged pages; false forgets them, so every page's
        /// records are read and stored anew (a pass that reads everything, or one retrying
        /// records an earlier pass could not store).
        public var trustsPageDigests: Bool
        /// A sweep merely due may take unchanged pages for what the last sweep listed
        /// (``PassPlan/listingAtRest``), when the replica says no row came or went since; one a
        /// person asked for, or one owed, lists every id.
        public var mayTakeListingAtRest: Bool

        /// Whether the stored cursor is used.
        public var usesCursor: Bool { mode == .incremental }
        /// The connection is tuned for writing the whole store.
        public var bulk: Bool { mode != .incremental }
        /// The pass fills an empty table: its batches are held and merged in id order, and,
        /// read to the end without a gap, its rows are its listing (as after a clean sweep).
        public var fillsEmptyTable: Bool { mode == .firstSync(spooled: true) || mode == .rebuild(staged: false) }
        /// The rows before the pass are counted, the base of `max-delete-share`.
        public func countsRowsBefore(reportsDeletions: Bool) -> Bool { sweeps && !reportsDeletions }
    }

    public static func plan(_ facts: Facts) -> Decision {
        let rebuilding = facts.resync || facts.identityMoved
        let retriesPending = !rebuilding && facts.hasPendingRecords
        let due = facts.sweepDue && !facts.reportsDeletions
        let wanted = rebuilding || due || facts.sweepOwed || (retriesPending && !facts.fetchesByID)
        // An empty table has nothing to sweep: a first sync's listing of every id would cost
        // about as much as the sync itself.
        let sweeps = wanted && facts.hasRecords
        let mode: Mode = if rebuilding {
            .rebuild(staged: facts.hasRecords)
        } else if !facts.hasCursor {
            .firstSync(spooled: !facts.hasRecords)
        } else {
            .incremental
        }
        let trusts = mode == .incremental && !retriesPending
        return Decision(mode: mode, sweeps: sweeps, fetchesPending: retriesPending && facts.fetchesByID, trustsPageDigests: trusts,
                        mayTakeListingAtRest: trusts && sweeps && due && facts.sweepScheduled && !facts.sweepOwed)
    }
}
