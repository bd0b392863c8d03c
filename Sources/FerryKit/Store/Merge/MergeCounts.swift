/// What applying batches did to a store.
public struct MergeCounts: Sendable, Equatable {
    public var inserted = 0
    public var updated = 0
    public var deleted = 0
    /// Changes that changed nothing: stale or replayed versions, deletes of unknown ids.
    public var unchanged = 0
    /// Bad records skipped under the `skip` policy (each one is in ``problems``).
    public var skipped = 0
    /// Remote changes that met a queued local change (``ConflictPlan``), whatever the policy did.
    public var conflicts = 0
    public var problems: [RecordProblem] = []

    public init(inserted: Int = 0, updated: Int = 0, deleted: Int = 0, unchanged: Int = 0, skipped: Int = 0, problems: [RecordProblem] = []) {
        self.inserted = inserted
        self.updated = updated
        self.deleted = deleted
        self.unchanged = unchanged
        self.skipped = skipped
        self.problems = problems
    }

    /// Accumulates the counts of several batches (a whole pass).
    public static func + (lhs: MergeCounts, rhs: MergeCounts) -> MergeCounts {
        var sum = MergeCounts(
            inserted: lhs.inserted + rhs.inserted, updated: lhs.updated + rhs.updated, deleted: lhs.deleted + rhs.deleted,
            unchanged: lhs.unchanged + rhs.unchanged, skipped: lhs.skipped + rhs.skipped, problems: lhs.problems + rhs.problems
        )
        sum.conflicts = lhs.conflicts + rhs.conflicts
        return sum
    }

    public static func += (lhs: inout MergeCounts, rhs: MergeCounts) { lhs = lhs + rhs }
}
