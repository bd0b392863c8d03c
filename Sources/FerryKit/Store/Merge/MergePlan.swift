import Foundation

/// The merge rules as a pure function: what one incoming change does to the row the replica
/// holds for its id. ``ReplicaDatabase/apply(_:to:)`` follows it (its SQL fast paths are
/// checked against it by a randomized equivalence test), and its tests read as the table:
///
/// | incoming          | stored row              | action        | logged  |
/// |-------------------|-------------------------|---------------|---------|
/// | a bad record      | (any)                   | `.problem`    | -       |
/// | upsert            | none                    | `.insert`     | insert  |
/// | upsert, newer     | live                    | `.update`     | update  |
/// | upsert, same version, other body | live     | `.update`     | update  |
/// | upsert, same version and body    | live     | `.unchanged`  | -       |
/// | upsert, older     | live                    | `.unchanged`  | -       |
/// | upsert, not older | tombstone               | `.resurrect`  | insert  |
/// | upsert, older     | tombstone               | `.unchanged`  | -       |
/// | delete            | live, deletion = hard   | `.delete`     | delete  |
/// | delete            | live, deletion = tomb.  | `.tombstone`  | delete  |
/// | delete            | none or tombstone       | `.unchanged`  | -       |
///
/// "Newer" is ``VersionComparison``: ordered versions must sort higher (a replayed or stale
/// page never overwrites newer data), opaque ones (ETags) must differ, and an opaque version
/// is never "older". A version equal to the stored one with another body is a change all the
/// same: APIs stamp whole seconds or minutes (Notion rounds to the minute), so two edits
/// inside one stamp carry one version, and SOGo's ETags are counters that start again at
/// `"gcs00000000"` when a member is deleted and made again, so only the body tells the second
/// from the first. ("Another body" is the caller's to say: for vCards and iCalendar objects
/// it is other content lines, not the same lines a server wrote in another order.) A
/// record listed live at the version of its tombstone is live: a listing that moved under a
/// sweep may have tombstoned it, and nothing but a live listing says otherwise. A rebuild
/// (``ReplicaDatabase/apply(_:to:)`` with `rebuilds`) writes whatever differs, version or
/// body. Within one batch only the last change of an id applies; the earlier ones count as
/// unchanged.
enum MergePlan {
    /// What the replica holds for one id.
    struct Stored: Sendable, Equatable {
        var version: String
        var deleted: Bool
        /// The stored body, where the caller has it (the SQL merge compares bodies in SQL and
        /// passes only whether they are equal); nil: taken as the incoming one's.
        var body: Data?

        init(version: String, deleted: Bool, body: Data? = nil) {
            self.version = version
            self.deleted = deleted
            self.body = body
        }
    }

    enum Action: Sendable, Equatable {
        case insert
        case update
        /// A tombstone brought back by a newer version: a row again, logged as an insert.
        case resurrect
        case unchanged
        case delete
        case tombstone
        /// The record cannot be stored; the store's `on-bad-record` policy decides what follows.
        case problem(String)

        /// The change-log operation the action writes, if any.
        var logged: ChangeLogBuffer.Operation? {
            switch self {
            case .insert, .resurrect: .insert
            case .update: .update
            case .delete, .tombstone: .delete
            case .unchanged, .problem: nil
            }
        }
    }

    /// The action for `change` against `stored` (nil: no row with that id).
    static func action(for change: RecordChange, stored: Stored?, comparison: VersionComparison, deletion: DeletionPolicy,
                       maxRecordBytes: Int) -> Action {
        switch change {
        case .upsert(let record):
            if let reason = problem(with: record, maxBytes: maxRecordBytes) { return .problem(reason) }
            return upsertAction(incoming: record.version, stored: stored, sameBody: stored?.body.map { $0 == record.body } ?? true,
                                comparison: comparison)
        case .delete(let id):
            if id.isEmpty { return .problem("empty id") }
            return deleteAction(stored: stored, deletion: deletion)
        }
    }

    /// An upsert of a valid record; `sameBody`: the incoming body is the stored one, byte for
    /// byte. `rebuilding`: a rebuild's upsert, which writes whatever differs.
    static func upsertAction(incoming version: String, stored: Stored?, sameBody: Bool, comparison: VersionComparison,
                             rebuilding: Bool = false) -> Action {
        guard let stored else { return .insert }
        if stored.deleted {
            let older = !rebuilding && comparison == .ordered && VersionOrder.order(version, stored.version) == .older
            return older ? .unchanged : .resurrect
        }
        if rebuilding { return version != stored.version || !sameBody ? .update : .unchanged }
        return replaces(incoming: version, stored: stored.version, sameBody: sameBody, comparison: comparison) ? .update : .unchanged
    }

    /// A delete of a non-empty id.
    static func deleteAction(stored: Stored?, deletion: DeletionPolicy) -> Action {
        guard let stored, !stored.deleted else { return .unchanged }
        return deletion == .hard ? .delete : .tombstone
    }

    /// Whether an incoming version replaces the stored one of a live row; `sameBody`: the
    /// bodies are equal (a version equal to the stored one replaces it only when they are
    /// not).
    static func replaces(incoming: String, stored: String, sameBody: Bool = true, comparison: VersionComparison) -> Bool {
        switch comparison {
        case .opaque:
            return incoming != stored || !sameBody
        case .ordered:
            switch VersionOrder.order(incoming, stored) {
            case .newer: return true
            case .same: return !sameBody
            case .older: return false
            }
        }
    }

    /// Why a record cannot be stored, or nil.
    static func problem(with record: RemoteRecord, maxBytes: Int) -> String? {
        if record.id.isEmpty { return "empty id" }
        if record.body.count > maxBytes { return "record is \(record.body.count) bytes, more than the limit of \(maxBytes)" }
        if !isValidUTF8(record.body) { return "body is not valid UTF-8" }
        return nil
    }

    /// Most bodies are ASCII JSON: checking 8 bytes at a time for a high bit is far cheaper than
    /// building a String; only bodies with non-ASCII bytes get the full validation.
    static func isValidUTF8(_ body: Data) -> Bool {
        let ascii = body.withUnsafeBytes { raw -> Bool in
            var index = 0
            let count = raw.count
            // 32 bytes per test: one branch per four loads.
            while index + 32 <= count {
                let any = raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                    | raw.loadUnaligned(fromByteOffset: index + 8, as: UInt64.self)
                    | raw.loadUnaligned(fromByteOffset: index + 16, as: UInt64.self)
                    | raw.loadUnaligned(fromByteOffset: index + 24, as: UInt64.self)
                if any & 0x8080_8080_8080_8080 != 0 { return false }
                index += 32
            }
            while index + 8 <= count {
                if raw.loadUnaligned(fromByteOffset: index, as: UInt64.self) & 0x8080_8080_8080_8080 != 0 { return false }
                index += 8
            }
            while index < count {
                if raw[index] & 0x80 != 0 { return false }
                index += 1
            }
            return true
        }
        return ascii || String(validating: body, as: UTF8.self) != nil
    }
}

extension MergeCounts {
    /// Counts one action.
    mutating func add(_ action: MergePlan.Action) {
        switch action {
        case .insert, .resurrect: inserted += 1
        case .update: updated += 1
        case .delete, .tombstone: deleted += 1
        case .unchanged: unchanged += 1
        case .problem: skipped += 1
        }
    }
}
