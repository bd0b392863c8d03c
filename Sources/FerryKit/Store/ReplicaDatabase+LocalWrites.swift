import Foundation

/// Writes to a store's table from any program but Ferry are refused, with an error that says
/// why, until Ferry pushes local writes to the remote.
///
/// Before, a local `UPDATE` committed, was never sent, and vanished at the next remote change
/// of that record: the worst kind of failure, a silent one. Now every other SQLite client (the
/// `sqlite3` shell, Python, an application) gets
///
///     Runtime error: ferry: store "quotes" is read-only: Ferry does not push local writes to
///     the remote yet, and its next pass would replace them
///
/// and nothing is written. The guards are `BEFORE` triggers on `INSERT`, `UPDATE` and
/// `DELETE`, so they hold for every client in every language and cost Ferry nothing: its
/// writer connection runs with triggers off (``SQLiteConnection/setTriggersEnabled(_:)``).
extension ReplicaDatabase {
    /// The operations a guard refuses, in the trigger names' words.
    static let guardedOperations = ["INSERT", "UPDATE", "DELETE"]

    static func localWriteGuardName(store: String, operation: String) -> String {
        "ferry_refuse_local_\(operation.lowercased())_\(store)"
    }

    /// The `CREATE TRIGGER` statement of one guard, as SQLite stores it in `sqlite_schema`.
    static func localWriteGuard(store: String, operation: String) -> String {
        let message = "ferry: store \(store.debugDescription) is read-only: Ferry does not push local writes to the remote yet, and its next pass would replace them"
        return "CREATE TRIGGER \(quoted(localWriteGuardName(store: store, operation: operation))) BEFORE \(operation) ON \(quoted(store)) "
            + "BEGIN SELECT RAISE(ABORT, \(literal(message))); END"
    }

    /// Creates the store's guards, or replaces one whose text differs (a store renamed, a
    /// message reworded). Inside ``prepare(_:)``'s transaction; costs no DDL when nothing
    /// changed, because DDL would expire every prepared statement on the connection.
    func installLocalWriteGuards(store: String) throws(SQLiteError) {
        let existing = try connection.prepare("SELECT sql FROM sqlite_schema WHERE type = 'trigger' AND name = ?1")
        for operation in Self.guardedOperations {
            let name = Self.localWriteGuardName(store: store, operation: operation)
            let wanted = Self.localWriteGuard(store: store, operation: operation)
            existing.reset()
            try existing.bind(name, at: 1)
            let found: String? = try existing.step() ? existing.string(at: 0) : nil
            guard found != wanted else { continue }
            if found != nil { try connection.execute("DROP TRIGGER \(quoted(name))") }
            try connection.execute(wanted)
        }
    }
}
