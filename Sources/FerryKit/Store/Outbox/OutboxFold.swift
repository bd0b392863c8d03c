/// What a queued local change becomes as more happens to its record, as pure tables.
///
/// The queue keeps one entry per record, so every event folds into the entry already there:
/// a local write (the triggers), a send the remote accepted while a newer write waited (the
/// push), a conflict the local side won (the conflict's resolution). The SQL that does it is
/// generated from these tables (the `sql` functions below), so the triggers and the push cannot come to
/// disagree with them, and the tests read the tables against what a real replica does.
///
/// | queued entry   | local insert | local update | local delete          |
/// |----------------|--------------|--------------|-----------------------|
/// | none           | create       | update       | delete, if the row was synced; else none |
/// | create, unsent | create       | create       | none (the remote never had it) |
/// | create, sent   | create       | create       | create (the push finds the row gone and undoes it) |
/// | update         | update       | update       | delete                |
/// | delete         | update (made again under the remote's id) | delete | delete |
///
/// A send the remote accepted takes the entry off, unless a local write came after it and
/// something is left to push (the remote's record, or the row); then:
///
/// | a send the remote accepted, a newer local write waiting | entry becomes |
/// |----------------------------------------------------------|---------------|
/// | the row is gone                                          | delete        |
/// | the send was a delete, the row is there (made again)     | create        |
/// | the entry was a create (the remote has it now)           | update        |
/// | otherwise                                                | as it was     |
///
/// | a conflict the local side won | entry becomes                    |
/// |-------------------------------|----------------------------------|
/// | the remote deleted the record | create (it goes back as itself)  |
/// | the entry was a create        | update (over the remote's record)|
/// | otherwise                     | as it was                        |
enum OutboxFold {
    // MARK: - The tables

    /// The entry a local write leaves, given the entry queued before it (nil: none, and nil
    /// returned: none is left). `synced`: the row had a remote version before the write.
    static func afterLocalWrite(_ write: LocalOperation, queued: LocalOperation?, sent: Bool, synced: Bool) -> LocalOperation? {
        switch (write, queued) {
        case (.create, nil), (.create, .create): .create
        case (.create, .update), (.create, .delete): .update
        case (.update, nil): .update
        case (.update, let queued?): queued
        case (.delete, nil): synced ? .delete : nil
        // A queued create's row has no remote version yet: the push gives it one when it takes
        // the entry off (or turns it into an update), so `synced` says nothing here.
        case (.delete, .create): sent ? .create : nil
        case (.delete, .update), (.delete, .delete): .delete
        }
    }

    /// Whether an accepted send takes the entry off the queue or leaves it rebased on what the
    /// remote now holds: it stays when a local write came after the send and something is left
    /// to push (the remote's record to update, or a row to create again).
    static func staysAfterAcceptedSend(newerLocalWrite: Bool, remoteHasRecord: Bool, rowExists: Bool) -> Bool {
        newerLocalWrite && (remoteHasRecord || rowExists)
    }

    /// The entry after the remote accepted a send of `sent` while a newer local write of the
    /// record waited (queued as `queued`).
    static func afterAcceptedSend(queued: LocalOperation, sent: LocalOperation, rowExists: Bool) -> LocalOperation {
        if !rowExists { return .delete }
        if sent == .delete { return .create }
        return queued == .create ? .update : queued
    }

    /// The entry after a conflict the local side won, rebased on what the remote holds.
    static func afterLocalWin(queued: LocalOperation, remoteExists: Bool) -> LocalOperation {
        if !remoteExists { return .create }
        return queued == .create ? .update : queued
    }

    // MARK: - The SQL

    /// A fold's input as SQL, with the values it takes.
    struct Input<Value: Sendable>: Sendable {
        let sql: String
        let values: [(Value, String)]
    }

    /// The queued entry's own operation (`ferry_outbox.op`).
    static let queuedOperation = operation("op")

    /// An operation held in `sql` (a column or a parameter).
    static func operation(_ sql: String) -> Input<LocalOperation> {
        Input(sql: sql, values: LocalOperation.allCases.map { ($0, $0.sql) })
    }

    /// A truth held in `sql`, as SQLite's 0 and 1 (`sent IS NOT NULL`, `?6 <> 0`).
    static func truth(_ sql: String) -> Input<Bool> {
        Input(sql: sql, values: [(false, "0"), (true, "1")])
    }

    /// `CASE` over one input: `CASE op WHEN 1 THEN 1 WHEN 2 THEN 2 WHEN 3 THEN 2 END`.
    static func sql<A>(_ a: Input<A>, _ fold: (A) -> LocalOperation) -> String {
        "CASE \(a.sql) " + a.values.map { "WHEN \($0.1) THEN \(fold($0.0).sql)" }.joined(separator: " ") + " END"
    }

    /// `CASE` over two inputs, by their pairs (row values need no SQLite beyond 3.15).
    static func sql<A, B>(_ a: Input<A>, _ b: Input<B>, _ fold: (A, B) -> LocalOperation) -> String {
        var cases: [String] = []
        for (valueA, sqlA) in a.values {
            for (valueB, sqlB) in b.values {
                cases.append("WHEN (\(a.sql), \(b.sql)) = (\(sqlA), \(sqlB)) THEN \(fold(valueA, valueB).sql)")
            }
        }
        return "CASE " + cases.joined(separator: " ") + " END"
    }

    /// `CASE` over three inputs.
    static func sql<A, B, C>(_ a: Input<A>, _ b: Input<B>, _ c: Input<C>, _ fold: (A, B, C) -> LocalOperation) -> String {
        var cases: [String] = []
        for (valueA, sqlA) in a.values {
            for (valueB, sqlB) in b.values {
                for (valueC, sqlC) in c.values {
                    cases.append("WHEN (\(a.sql), \(b.sql), \(c.sql)) = (\(sqlA), \(sqlB), \(sqlC)) THEN \(fold(valueA, valueB, valueC).sql)")
                }
            }
        }
        return "CASE " + cases.joined(separator: " ") + " END"
    }

    /// A condition that holds for the input's values where `holds` does: `((OLD.version <> '') = 1)`.
    static func condition<A>(_ a: Input<A>, _ holds: (A) -> Bool) -> String {
        let cases = a.values.filter { holds($0.0) }.map { "(\(a.sql)) = \($0.1)" }
        return cases.isEmpty ? "0" : "(" + cases.joined(separator: " OR ") + ")"
    }

    /// A condition that holds for the inputs where `holds` does: `((op, sent IS NOT NULL) = (1, 0))`.
    static func condition<A, B>(_ a: Input<A>, _ b: Input<B>, _ holds: (A, B) -> Bool) -> String {
        var cases: [String] = []
        for (valueA, sqlA) in a.values {
            for (valueB, sqlB) in b.values where holds(valueA, valueB) {
                cases.append("(\(a.sql), \(b.sql)) = (\(sqlA), \(sqlB))")
            }
        }
        return cases.isEmpty ? "0" : "(" + cases.joined(separator: " OR ") + ")"
    }
}
