import FerryKit

/// The reference model where timing decides: one record's round as it happened (local writes,
/// the other client's writes and passes, in order) and every end state a correct sync may
/// reach from it, whatever each pass managed before a fault cut it short.
///
/// A pass before the round's settle may have done all of its work or none of it: a lost answer
/// or a kill leaves a send that the next pass finds landed (and takes as done) or not landed
/// (and sends again), so a pass counts as having synced the record at that point or not at
/// all. A pass that syncs pulls and pushes as the policies say:
/// - the replica's queued write, based on the version it last saw, meets the remote: the remote
///   unchanged since, it is pushed; changed, it is a conflict (both deleted: nothing to decide),
///   carried out by the policy (local-wins pushes the local side, in this pass or a later one;
///   keep-both makes the local side a copy; hold keeps both until the settle's choice);
/// - nothing queued, the replica takes the remote.
/// The other client writes without conditions, so a push it follows is simply overwritten. The
/// settle syncs until nothing is left.
///
/// Where the remote keeps no trace of a record deleted before the replica listed it (Parse),
/// a create may also land unacknowledged: the next pass finds it as sent (done), changed (a
/// conflict, as any), or gone, and gone reads as never arrived: it is sent again, without a
/// conflict, whatever the other client's delete meant. Pure: no I/O.
extension TwoWayModel {
    /// One thing that happened to a record in a round, in order.
    enum Event: Equatable, CustomStringConvertible {
        case local(Local)
        case other(Other)
        /// A pass that may have synced the record, or not (a fault cut it short).
        case pass

        var description: String {
            switch self {
            case .local(let write): "local \(write)"
            case .other(let write): "other \(write)"
            case .pass: "pass"
            }
        }
    }

    /// One record's settled state: its values (copies included, sorted) and how many conflicts
    /// it met.
    struct RecordOutcome: Hashable, CustomStringConvertible {
        var values: [String]
        var conflicts: Int
        var description: String { "\(values)" + (conflicts > 0 ? " with \(conflicts) conflict\(conflicts == 1 ? "" : "s")" : "") }
    }

    /// What sync knows of one record at a point of the round.
    private struct Sync: Hashable {
        /// The remote's value (nil: no record) and how many writes made it.
        var remote: String?
        var remoteWrites = 0
        /// The remote writes the replica has seen.
        var seen = 0
        /// The replica's queued write, folded.
        var queued: Local?
        /// A conflict held for a person's choice.
        var held = false
        /// keep-both's copies of local sides.
        var copies: [String] = []
        var conflicts = 0
        /// The queued create landed, the replica not knowing it (its answer lost).
        var unacknowledged = false

        var localValue: String? {
            switch queued {
            case .create(let value)?, .update(let value)?: value
            case .delete?, nil: nil
            }
        }

        /// A push of the queued write over the remote as it is.
        mutating func push() {
            guard queued != nil else { return }
            remote = localValue
            remoteWrites += 1
            seen = remoteWrites
            queued = nil
        }

        /// One pass syncing the record; several states where the policy leaves the timing open
        /// (local-wins pushing now or in a later pass).
        func synced(_ policy: ConflictPolicy) -> [Sync] {
            var next = self
            if unacknowledged {
                next.unacknowledged = false
                if remote == nil {
                    // Gone before the replica listed it: to the replica it never arrived.
                    next.seen = remoteWrites
                    next.push()
                    return [next]
                }
                if remote == localValue, seen == remoteWrites {
                    next.queued = nil
                    return [next]
                }
            }
            guard queued != nil else {
                next.seen = remoteWrites
                return [next]
            }
            if held { return [next] }
            if seen == remoteWrites {
                next.push()
                return [next]
            }
            if localValue == nil, remote == nil {
                next.queued = nil
                next.seen = remoteWrites
                return [next]
            }
            next.conflicts += 1
            next.seen = remoteWrites
            switch policy {
            case .hold:
                next.held = true
                return [next]
            case .remoteWins:
                next.queued = nil
                return [next]
            case .localWins:
                var pushed = next
                pushed.push()
                return [next, pushed]
            case .keepBoth:
                if let value = next.localValue { next.copies.append(value) }
                next.queued = nil
                return [next]
            }
        }

        /// The settle: a held conflict resolved by `choice`, then passes until nothing is left.
        func settled(_ policy: ConflictPolicy, choice: ConflictPlan.Resolution?) -> Sync {
            var state = self
            for _ in 0..<4 {
                if state.held {
                    state.held = false
                    switch choice ?? .takeRemote {
                    case .takeRemote, .hold: state.queued = nil
                    case .rebaseLocal: state.push()
                    case .keepBoth:
                        if let value = state.localValue { state.copies.append(value) }
                        state.queued = nil
                    }
                    state.seen = state.remoteWrites
                }
                // In the settle local-wins pushes at once (nothing comes between).
                state = state.synced(policy).last!
            }
            return state
        }
    }

    /// Every end state a correct sync may reach for one record that started the round as
    /// `start` (nil: no record), after `events`, under `policy`, a held conflict resolved by
    /// `choice`.
    ///
    /// `tracesDeletions` false: the remote keeps no trace of a record deleted before the
    /// replica listed it, so a create may land unacknowledged.
    static func allowed(start: String?, events: [Event], policy: ConflictPolicy, choice: ConflictPlan.Resolution?,
                        tracesDeletions: Bool = true) -> Set<RecordOutcome> {
        var states: Set<Sync> = [Sync(remote: start)]
        for event in events {
            var next: Set<Sync> = []
            for var state in states {
                switch event {
                case .local(let write):
                    if let queued = state.queued { state.queued = queued.then(write) } else { state.queued = write }
                    if state.unacknowledged, state.queued == nil {
                        // A create undone here after it landed: what it made is deleted.
                        state.queued = .delete
                        state.unacknowledged = false
                    }
                    next.insert(state)
                case .other(let write):
                    switch write {
                    case .create(let value), .update(let value): state.remote = value
                    case .delete: state.remote = nil
                    }
                    state.remoteWrites += 1
                    next.insert(state)
                case .pass:
                    next.insert(state)
                    next.formUnion(state.synced(policy))
                    if !tracesDeletions, !state.held, !state.unacknowledged, case .create(let value)? = state.queued, state.seen == state.remoteWrites {
                        var landed = state
                        landed.remote = value
                        landed.remoteWrites += 1
                        landed.seen = landed.remoteWrites
                        landed.unacknowledged = true
                        next.insert(landed)
                    }
                }
            }
            states = next
        }
        return Set(states.map { state in
            let end = state.settled(policy, choice: choice)
            return RecordOutcome(values: ((end.remote.map { [$0] } ?? []) + end.copies).sorted(), conflicts: end.conflicts)
        })
    }
}
