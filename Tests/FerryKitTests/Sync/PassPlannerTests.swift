import Testing
@testable import FerryKit

/// ``PassPlanner`` row by row, as its table reads.
@Suite("Pass planner")
struct PassPlannerTests {
    static func facts(_ edit: (inout PassPlanner.Facts) -> Void) -> PassPlanner.Facts {
        var facts = PassPlanner.Facts()
        facts.fetchesByID = true
        edit(&facts)
        return facts
    }

    typealias Row = (name: String, facts: PassPlanner.Facts, mode: PassPlanner.Mode, sweeps: Bool, digests: Bool, atRest: Bool)

    static let rows: [Row] = [
        ("a store never synced", facts { _ in }, .firstSync(spooled: true), false, false, false),
        ("a first sync a sweep was due for: nothing to sweep", facts { $0.sweepDue = true; $0.sweepScheduled = true }, .firstSync(spooled: true), false, false, false),
        ("a cursor lost, rows kept", facts { $0.hasRecords = true }, .firstSync(spooled: false), false, false, false),
        ("incremental", facts { $0.hasCursor = true; $0.hasRecords = true }, .incremental, false, true, false),
        ("incremental, sweep due", facts { $0.hasCursor = true; $0.hasRecords = true; $0.sweepDue = true; $0.sweepScheduled = true },
         .incremental, true, true, true),
        ("incremental, sweep asked for now (ferry sync --sweep)", facts { $0.hasCursor = true; $0.hasRecords = true; $0.sweepDue = true },
         .incremental, true, true, false),
        ("incremental, sweep owed", facts { $0.hasCursor = true; $0.hasRecords = true; $0.sweepOwed = true; $0.sweepDue = true; $0.sweepScheduled = true },
         .incremental, true, true, false),
        ("a DAV store: its token names deletions", facts { $0.hasCursor = true; $0.hasRecords = true; $0.sweepDue = true; $0.sweepScheduled = true; $0.reportsDeletions = true },
         .incremental, false, true, false),
        ("a DAV store owing a sweep (a refused one)", facts { $0.hasCursor = true; $0.hasRecords = true; $0.sweepOwed = true; $0.reportsDeletions = true },
         .incremental, true, true, false),
        ("records to fetch again by id", facts { $0.hasCursor = true; $0.hasRecords = true; $0.hasPendingRecords = true }, .incremental, false, false, false),
        ("records to fetch again, no fetch by id: a sweep reads everything", facts { $0.hasCursor = true; $0.hasRecords = true; $0.hasPendingRecords = true; $0.fetchesByID = false },
         .incremental, true, false, false),
        ("ferry resync with rows", facts { $0.resync = true; $0.hasCursor = true; $0.hasRecords = true; $0.hasPendingRecords = true }, .rebuild(staged: true), true, false, false),
        ("url changed with rows", facts { $0.identityMoved = true; $0.hasCursor = true; $0.hasRecords = true }, .rebuild(staged: true), true, false, false),
        ("ferry resync of an empty table", facts { $0.resync = true; $0.hasCursor = true }, .rebuild(staged: false), false, false, false),
    ]

    @Test func theTable() {
        for row in Self.rows {
            let decision = PassPlanner.plan(row.facts)
            #expect(decision.mode == row.mode, "\(row.name)")
            #expect(decision.sweeps == row.sweeps, "\(row.name): sweeps")
            #expect(decision.trustsPageDigests == row.digests, "\(row.name): page digests")
            #expect(decision.mayTakeListingAtRest == row.atRest, "\(row.name): listing at rest")
            #expect(decision.bulk == (row.mode != .incremental), "\(row.name): bulk")
            #expect(decision.usesCursor == (row.mode == .incremental), "\(row.name): cursor")
        }
    }

    @Test func pendingRecordsAreFetchedByIDOnlyByKindsThatCan_andNeverByARebuild() {
        #expect(PassPlanner.plan(Self.facts { $0.hasCursor = true; $0.hasPendingRecords = true }).fetchesPending)
        #expect(!PassPlanner.plan(Self.facts { $0.hasCursor = true; $0.hasPendingRecords = true; $0.fetchesByID = false }).fetchesPending)
        #expect(!PassPlanner.plan(Self.facts { $0.resync = true; $0.hasCursor = true; $0.hasPendingRecords = true }).fetchesPending)
    }

    @Test func anEmptyTableIsFilledByFirstSyncsAndRebuildsAlike() {
        #expect(PassPlanner.plan(Self.facts { _ in }).fillsEmptyTable)
        #expect(PassPlanner.plan(Self.facts { $0.resync = true }).fillsEmptyTable)
        #expect(!PassPlanner.plan(Self.facts { $0.hasRecords = true }).fillsEmptyTable)
        #expect(!PassPlanner.plan(Self.facts { $0.hasCursor = true }).fillsEmptyTable)
    }
}

/// A cursor is stored in the replica and shown by `ferry status`: one that carries a
/// credential, configured or fetched at run time, is refused.
@Suite struct CursorSecretTests {
    @Test func aCursorCarryingACredentialIsRefused() {
        let key = Secret("s3cr3t-api-key-value", source: "test")
        #expect(PullPhase.carriesSecret("https://dav.example.com/sync/s3cr3t-api-key-value/42", [key]))
        #expect(!PullPhase.carriesSecret("https://dav.example.com/sync/42", [key]))
        #expect(!PullPhase.carriesSecret(#"{"highWater":"2026-11-27T10:00:00Z"}"#, [key]))
    }
}
