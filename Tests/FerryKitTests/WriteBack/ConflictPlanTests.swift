import Testing
@testable import FerryKit

/// ``ConflictPlan`` row by row, as its table reads.
@Suite("Conflict plan")
struct ConflictPlanTests {
    typealias Row = (local: LocalChange.Operation, base: String?, held: Bool, remote: ConflictPlan.Remote, expected: ConflictPlan.Outcome)

    static let rows: [Row] = [
        (.update, "2", false, .upsert(version: "2"), .keepLocal),
        (.update, "2", false, .upsert(version: "1"), .keepLocal),
        (.delete, "2", false, .upsert(version: "2"), .keepLocal),
        (.delete, "2", false, .delete, .bothDeleted),
        (.create, nil, false, .delete, .keepLocal),
        (.update, "2", false, .delete, .conflict(.hold)),
        (.update, "2", false, .upsert(version: "3"), .conflict(.hold)),
        (.delete, "2", false, .upsert(version: "3"), .conflict(.hold)),
        (.create, nil, false, .upsert(version: "1"), .conflict(.hold)),
        (.update, "2", true, .upsert(version: "3"), .refreshHeld),
        (.update, "2", true, .delete, .refreshHeld),
        (.create, nil, true, .upsert(version: "4"), .refreshHeld),
        (.create, nil, true, .delete, .refreshHeld),
    ]

    @Test func theTable() {
        for row in Self.rows {
            let outcome = ConflictPlan.outcome(local: row.local, base: row.base, held: row.held, remote: row.remote, comparison: .ordered, policy: .hold)
            #expect(outcome == row.expected, "\(row.local) base \(row.base ?? "-") held \(row.held) meets \(row.remote)")
        }
    }

    @Test func opaqueVersionsConflictWheneverTheyDiffer() {
        #expect(ConflictPlan.outcome(local: .update, base: "\"b\"", held: false, remote: .upsert(version: "\"a\""), comparison: .opaque, policy: .hold) == .conflict(.hold))
        #expect(ConflictPlan.outcome(local: .update, base: "\"b\"", held: false, remote: .upsert(version: "\"b\""), comparison: .opaque, policy: .hold) == .keepLocal)
    }

    @Test func policiesResolve() {
        #expect(ConflictPlan.resolution(.hold, localDeleted: false, remoteDeleted: false) == .hold)
        #expect(ConflictPlan.resolution(.remoteWins, localDeleted: false, remoteDeleted: true) == .takeRemote)
        #expect(ConflictPlan.resolution(.localWins, localDeleted: true, remoteDeleted: false) == .rebaseLocal)
        #expect(ConflictPlan.resolution(.keepBoth, localDeleted: false, remoteDeleted: false) == .keepBoth)
        // Nothing local to keep beside the remote record.
        #expect(ConflictPlan.resolution(.keepBoth, localDeleted: true, remoteDeleted: false) == .takeRemote)
        // Nothing remote to keep beside the local record: it goes back as itself, under its own
        // id (another client that names it by its id still finds it), not as a copy.
        #expect(ConflictPlan.resolution(.keepBoth, localDeleted: false, remoteDeleted: true) == .rebaseLocal)
        #expect(ConflictPlan.outcome(local: .update, base: "2", held: false, remote: .delete, comparison: .ordered, policy: .keepBoth) == .conflict(.rebaseLocal))
    }

    /// A push the remote answered "changed" (or a record found deleted): no news is a conflict
    /// too, by the policy; every other outcome stands.
    @Test func whatTheRemoteSaidChangedIsAConflictEvenWhenTheVersionSaysNoNews() {
        #expect(ConflictPlan.saidChanged(.keepLocal, policy: .remoteWins, localDeleted: false, remoteDeleted: false) == .conflict(.takeRemote))
        #expect(ConflictPlan.saidChanged(.keepLocal, policy: .keepBoth, localDeleted: false, remoteDeleted: true) == .conflict(.rebaseLocal))
        #expect(ConflictPlan.saidChanged(.keepLocal, policy: .keepBoth, localDeleted: true, remoteDeleted: false) == .conflict(.takeRemote))
        for outcome in [ConflictPlan.Outcome.bothDeleted, .refreshHeld, .conflict(.hold), .conflict(.keepBoth)] {
            #expect(ConflictPlan.saidChanged(outcome, policy: .localWins, localDeleted: false, remoteDeleted: false) == outcome)
        }
    }

    @Test func aPersonsKeepBothKeepsTheSideThatIsLeft() {
        #expect(ConflictPlan.effective(.keepBoth, localDeleted: false, remoteDeleted: true) == .rebaseLocal)
        #expect(ConflictPlan.effective(.keepBoth, localDeleted: true, remoteDeleted: false) == .takeRemote)
        #expect(ConflictPlan.effective(.keepBoth, localDeleted: false, remoteDeleted: false) == .keepBoth)
        #expect(ConflictPlan.effective(.takeRemote, localDeleted: false, remoteDeleted: true) == .takeRemote)
    }
}
