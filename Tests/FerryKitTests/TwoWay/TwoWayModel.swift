import FerryKit

/// The reference model of two-way sync: what the remote and the replica must hold, and which
/// records must have met a conflict, after one round of local writes and another client's
/// writes has settled, whatever faults came between (lost answers, kills, two pushers).
///
/// A record is named by its key (a field every kind's body carries, kept by keep-both's copies)
/// and holds one value; every write writes a value never written before. A round starts with
/// the replica equal to the remote and nothing queued; held conflicts are resolved before the
/// round settles. ``settle(start:local:other:policy:chosen:)`` is the outcome of a round whose
/// writes meet in one order (on a record both sides write, the other client writes before any
/// pass and local writes come first), independent of how passes and faults interleave;
/// ``allowed(start:events:policy:choice:)`` is every outcome of a round in any order, where
/// which pass got through before which write decides, and it is what the driver checks.
/// Pure: no I/O.
enum TwoWayModel {
    /// A local write as the outbox folds it.
    enum Local: Hashable, CustomStringConvertible {
        case create(String)
        case update(String)
        case delete

        var description: String {
            switch self {
            case .create(let value): "create \(value)"
            case .update(let value): "update \(value)"
            case .delete: "delete"
            }
        }

        /// This write followed by `next` on the same record.
        func then(_ next: Local) -> Local? {
            switch (self, next) {
            case (.create, .update(let value)): .create(value)
            // A create deleted before it was pushed is nothing.
            case (.create, .delete): nil
            case (.update, .update(let value)): .update(value)
            case (.update, .delete): .delete
            case (.delete, .create(let value)), (.delete, .update(let value)): .update(value)
            case (_, let next): next
            }
        }
    }

    /// Another client's write, folded the same way.
    enum Other: Hashable, CustomStringConvertible {
        /// A record the replica does not have yet (or a collision with a local create's key).
        case create(String)
        case update(String)
        case delete

        var description: String {
            switch self {
            case .create(let value): "create \(value)"
            case .update(let value): "update \(value)"
            case .delete: "delete"
            }
        }

        func then(_ next: Other) -> Other {
            switch (self, next) {
            case (.create, .update(let value)): .create(value)
            default: next
            }
        }
    }

    /// What a settled round must show.
    struct Outcome: Equatable {
        /// Every record on the remote (and so in the replica): key and value, copies included.
        var records: [String: [String]]
        /// Keys whose round met a conflict (exactly one recorded each).
        var conflicts: Set<String>
    }

    /// The settled state after a round that started at `start` (key → value), with local writes
    /// `local` and the other client's `other`, under `policy`; a held conflict is resolved by
    /// `chosen[key]` (a person's choice, made before the round settles).
    /// A key with several values (keep-both's copies) is never written again: which copy a
    /// write meant would be a guess.
    static func settle(start: [String: [String]], local: [String: Local], other: [String: Other], policy: ConflictPolicy,
                       chosen: [String: ConflictPlan.Resolution]) -> Outcome {
        var records = start
        var conflicts: Set<String> = []
        for key in Set(local.keys).union(other.keys) {
            let mine = local[key]
            let theirs = other[key]
            // What the remote holds for the key after the other client, before any push.
            precondition(start[key].map { $0.count == 1 } ?? true, "a key with copies was written: \(key)")
            var remote: String? = start[key]?.first
            switch theirs {
            case .create(let value)?, .update(let value)?: remote = value
            case .delete?: remote = nil
            case nil: break
            }
            guard let mine else {
                records[key] = remote.map { [$0] }
                continue
            }
            let localValue: String? = switch mine {
            case .create(let value), .update(let value): value
            case .delete: nil
            }
            guard theirs != nil else {
                records[key] = localValue.map { [$0] }
                continue
            }
            // Both sides wrote. Deleted on both: nothing to decide.
            if localValue == nil, remote == nil {
                records[key] = nil
                continue
            }
            conflicts.insert(key)
            // The policies as the README states them, written here again rather than read from
            // the code under test.
            var resolution: ConflictPlan.Resolution = switch policy {
            case .hold: chosen[key] ?? .takeRemote
            case .remoteWins: .takeRemote
            case .localWins: .rebaseLocal
            case .keepBoth: .keepBoth
            }
            // Keep-both of a local delete has nothing local to keep.
            if resolution == .keepBoth, localValue == nil { resolution = .takeRemote }
            switch resolution {
            case .takeRemote, .hold: records[key] = remote.map { [$0] }
            case .rebaseLocal: records[key] = localValue.map { [$0] }
            case .keepBoth: records[key] = (remote.map { [$0] } ?? []) + (localValue.map { [$0] } ?? [])
            }
        }
        return Outcome(records: records.filter { !$0.value.isEmpty }.mapValues { $0.sorted() }, conflicts: conflicts)
    }
}
