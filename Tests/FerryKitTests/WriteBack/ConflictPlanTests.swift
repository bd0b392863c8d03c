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
        #expect(ConflictPlan.resolution(.hold, localDeleted: false) == .hold)
        #expect(ConflictPlan.resolution(.remoteWins, localDeleted: false) == .takeRemote)
        #expect(ConflictPlan.resolution(.localWins, localDeleted: true) == .rebaseLocal)
        #expect(ConflictPlan.resolution(.keepBoth, localDeleted: false) == .keepBoth)
        // Nothing local to keep beside the remote record.
        #expect(ConflictPlan.resolution(.keepBoth, localDeleted: true) == .takeRemote)
    }
}
