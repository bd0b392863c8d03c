/// What happens when a record changed locally (queued in the outbox, not yet pushed) has also
/// changed on the remote since the version the local change was made on.
///
/// Whatever the policy, the conflict is recorded with both versions in `ferry_conflicts`,
/// logged with `MESSAGE_ID` ``MessageID/conflictRecorded``, and counted by `ferry status`:
/// a policy decides which side the replica and the remote end up with, never whether anybody
/// is told.
public enum ConflictPolicy: String, Sendable, Equatable, CaseIterable {
    /// The default. Neither side is overwritten: the local row and its queued change stay as
    /// they are, the remote version is kept beside them in `ferry_conflicts`, and the record is
    /// not pushed until a person (or a program) chooses: `ferry conflicts resolve`, or
    /// `UPDATE ferry_conflicts SET resolution = 'local' | 'remote' | 'both'`. The store reads
    /// `conflicts`, not `ok`, meanwhile. Chosen as the default because it is the only policy
    /// that can be wrong about nothing: the other three pick a winner for data Ferry cannot
    /// judge (vdirsyncer and Unison also stop and ask by default).
    case hold
    /// The remote version replaces the local row and the queued change is dropped; the local
    /// version survives only in `ferry_conflicts`.
    case remoteWins = "remote-wins"
    /// The local version is pushed over the remote one (conditional on the version just seen,
    /// so a third writer is still noticed); the remote version is kept in `ferry_conflicts`.
    case localWins = "local-wins"
    /// The remote version takes the record's row; the local version becomes a new record
    /// (a new id, and for vCard/iCalendar a new UID) that is pushed as a create.
    case keepBoth = "keep-both"
}

/// A store's write-back settings (`push =`, `conflict =`).
public struct WriteBackConfiguration: Sendable, Equatable {
    /// Whether local writes to the store's table are queued and pushed; without it the table
    /// refuses local writes.
    public var push: Bool
    public var conflict: ConflictPolicy

    public init(push: Bool = false, conflict: ConflictPolicy = .hold) {
        self.push = push
        self.conflict = conflict
    }
}
