/// What a remote change does to a record with a queued local change, as a pure table. The
/// merge (a pull that meets a queued record) and the push (a remote that answers "changed
/// since") both follow it, and its tests read as the table:
///
/// | local change | remote change                      | outcome                  |
/// |--------------|------------------------------------|--------------------------|
/// | update/delete| upsert, not newer than the base    | `.keepLocal` (no news)   |
/// | delete       | delete                             | `.bothDeleted`           |
/// | create       | delete                             | `.keepLocal` (`.refreshHeld` when held) |
/// | update       | delete                             | conflict                 |
/// | update/delete| upsert, newer than the base        | conflict                 |
/// | create       | upsert (the same id: both created) | conflict                 |
/// | (held)       | anything newer                     | `.refreshHeld`           |
///
/// Where the remote itself said the record changed (a push's condition failed), no news is a
/// conflict too (``saidChanged(_:policy:localDeleted:remoteDeleted:)``).
///
/// and a conflict resolves by the store's ``ConflictPolicy``:
///
/// | policy       | replica row        | queued change                                  |
/// |--------------|--------------------|------------------------------------------------|
/// | hold         | the local one      | held until resolved                            |
/// | remote-wins  | the remote one     | dropped                                        |
/// | local-wins   | the local one      | rebased on the remote version (a create if the remote deleted it) |
/// | keep-both    | the remote one     | the local body queued as a new record          |
///
/// Keep-both keeps what each side has: a local delete that meets a remote update has nothing
/// local to keep, so the remote record comes back (as remote-wins); a local update that meets a
/// remote delete has nothing remote to keep, so the local record goes back as itself, under its
/// own id (as local-wins), not as a copy under a new one.
public enum ConflictPlan {
    /// The remote side of a meeting.
    enum Remote: Sendable, Equatable {
        case upsert(version: String)
        case delete
    }

    enum Outcome: Sendable, Equatable {
        /// The remote has nothing new for the record: the local change stays queued as it is.
        case keepLocal
        /// Both sides deleted the record: nothing is left to push.
        case bothDeleted
        /// The entry is already held: its open conflict takes the newer remote side.
        case refreshHeld
        case conflict(Resolution)
    }

    public enum Resolution: String, Sendable, Equatable {
        case hold
        case takeRemote = "remote"
        case rebaseLocal = "local"
        case keepBoth = "both"
    }

    static func outcome(local operation: LocalChange.Operation, base: String?, held: Bool, remote: Remote,
                        comparison: VersionComparison, policy: ConflictPolicy) -> Outcome {
        switch (operation, remote) {
        case (.delete, .delete):
            return .bothDeleted
        case (.create, .delete):
            // A create held over a record another writer made: that record went, and the
            // conflict shows it. A create not held has nothing there to meet.
            return held ? .refreshHeld : .keepLocal
        case (.update, .delete):
            return held ? .refreshHeld : .conflict(resolution(policy, localDeleted: false, remoteDeleted: true))
        case (.update, .upsert(let version)), (.delete, .upsert(let version)):
            if let base, !MergePlan.replaces(incoming: version, stored: base, comparison: comparison) { return .keepLocal }
            return held ? .refreshHeld : .conflict(resolution(policy, localDeleted: operation == .delete, remoteDeleted: false))
        case (.create, .upsert):
            return held ? .refreshHeld : .conflict(resolution(policy, localDeleted: false, remoteDeleted: false))
        }
    }

    /// The outcome when the remote itself said the record changed since the entry's base (a
    /// push's condition failed, or the record was found deleted): what the table calls no news
    /// is a conflict then too, as an opaque ETag the server rewrote is a change.
    static func saidChanged(_ outcome: Outcome, policy: ConflictPolicy, localDeleted: Bool, remoteDeleted: Bool) -> Outcome {
        guard case .keepLocal = outcome else { return outcome }
        return .conflict(resolution(policy, localDeleted: localDeleted, remoteDeleted: remoteDeleted))
    }

    static func resolution(_ policy: ConflictPolicy, localDeleted: Bool, remoteDeleted: Bool) -> Resolution {
        switch policy {
        case .hold: .hold
        case .remoteWins: .takeRemote
        case .localWins: .rebaseLocal
        case .keepBoth: effective(.keepBoth, localDeleted: localDeleted, remoteDeleted: remoteDeleted)
        }
    }

    /// What `resolution` does to a record one side deleted: keep-both keeps the side that is
    /// left. A person's choice goes through it too, as the store's policy does.
    static func effective(_ resolution: Resolution, localDeleted: Bool, remoteDeleted: Bool) -> Resolution {
        guard resolution == .keepBoth else { return resolution }
        if localDeleted { return .takeRemote }
        if remoteDeleted { return .rebaseLocal }
        return .keepBoth
    }
}
