import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// What every remote kind must do, run against each kind's real server: the invariants the
/// pass and the merge engine rely on, whoever implements the source.
///
/// - No sink call arrives off the pass's run loop, or after the pass ended (finished, failed,
///   cancelled, or the sink threw); a throwing sink ends the pass.
/// - A batch carries a cursor only when committing it is safe: a pass resumed from the cursor
///   of any committed prefix of batches ends with the same replica as one never interrupted.
/// - Replaying a pass, or passing again over an unchanged remote, merges nothing.
/// - An incremental pass after remote changes ends with the replica a full pass would build.
/// - A refusal of credentials is `.unauthorized`; a 429 with Retry-After is `.rateLimited`
///   with that wait.
@Suite("Every kind keeps the source contract", .serialized)
struct KindContractTests {
    @Test(arguments: ContractKind.allCases)
    func passesAreSafeToInterruptResumeAndReplay(_ kind: ContractKind) throws {
        guard let remote = try kind.start() else { return }
        let store = remote.store

        // A first sync, checked for its shape, merged into a real replica.
        let full = try Self.pass(remote, store, from: nil)
        try Self.expectClean(full, "\(kind) first sync")
        #expect(full.batches.count >= remote.minimumFirstSyncBatches, "\(kind): the first sync spans several batches (\(full.batches.count))")
        let replica = try ContractReplica(store)
        let first = try replica.apply(full.batches)
        #expect(first.inserted > 0)
        let afterFirstSync = try replica.rows()

        // Replaying the same batches merges nothing; so does a pass over the unchanged remote.
        #expect(try replica.apply(full.batches).changed == 0, "\(kind): a replayed pass merged something")
        let quiet = try Self.pass(remote, store, from: try replica.cursor())
        try Self.expectClean(quiet, "\(kind) no-change pass")
        #expect(try replica.apply(quiet.batches).changed == 0, "\(kind): a pass over an unchanged remote merged something")

        // Resuming the first sync from any committed prefix converges.
        for cut in Self.cuts(full.batches.count) {
            let partial = try ContractReplica(store)
            _ = try partial.apply(Array(full.batches.prefix(cut)))
            let resumed = try Self.pass(remote, store, from: try partial.cursor())
            try Self.expectClean(resumed, "\(kind) first sync resumed after batch \(cut)")
            _ = try partial.apply(resumed.batches)
            #expect(try partial.rows() == afterFirstSync, "\(kind): resuming after batch \(cut) of the first sync diverged")
        }

        // Remote changes: an incremental pass reaches what a full pass builds, and resuming it
        // from any committed prefix does too.
        try remote.change()
        let cursorBefore = try replica.cursor()
        let incremental = try Self.pass(remote, store, from: cursorBefore)
        try Self.expectClean(incremental, "\(kind) incremental pass")
        let incrementalCounts = try replica.apply(incremental.batches)
        #expect(incrementalCounts.changed > 0, "\(kind): the incremental pass saw the changes")
        let expected = try replica.rows()
        let rebuilt = try ContractReplica(store)
        _ = try rebuilt.apply(try Self.pass(remote, store, from: nil).batches)
        #expect(try rebuilt.rows() == expected, "\(kind): incremental and full passes disagree")
        for cut in Self.cuts(incremental.batches.count) {
            let partial = try ContractReplica(store)
            _ = try partial.apply(full.batches)
            _ = try partial.apply(Array(incremental.batches.prefix(cut)))
            #expect(try partial.cursor() != nil || cursorBefore == nil)
            let resumed = try Self.pass(remote, store, from: try partial.cursor())
            _ = try partial.apply(resumed.batches)
            #expect(try partial.rows() == expected, "\(kind): resuming after batch \(cut) of the incremental pass diverged")
        }

        // Ending early: a cancel after the first batch, a sink that throws on it.
        let cancelled = try Self.pass(remote, store, from: nil) { $0.cancelAfterBatches = 1 }
        #expect(cancelled.offLoopCalls == 0 && cancelled.callsAfterEnd == 0, "\(kind): calls after a cancel")
        let thrown = try Self.pass(remote, store, from: nil) { $0.failAfterBatches = 1 }
        #expect(thrown.batches.count == 1 && thrown.outcome == nil && thrown.error == nil, "\(kind): a throwing sink did not end the pass")
        #expect(thrown.offLoopCalls == 0 && thrown.callsAfterEnd == 0, "\(kind): calls after the sink threw")
    }

    @Test(arguments: ContractKind.allCases)
    func refusedCredentialsAndRateLimitsMapTheSameWay(_ kind: ContractKind) throws {
        guard let remote = try kind.start() else { return }
        let refused = try Self.pass(remote, try remote.refusingCredentials(), from: nil)
        let unauthorized = try #require(refused.error, "\(kind): refused credentials ended the pass without an error")
        #expect(unauthorized.kind == .unauthorized, "\(kind): \(unauthorized)")
        #expect(!unauthorized.isRetryable)
        #expect(refused.batches.isEmpty && refused.callsAfterEnd == 0)

        // A wait this short is taken within the pass (ReadRetry); not asked again, the rate
        // limit reaches the pass with the wait the remote named.
        var limiting = try remote.rateLimiting(retryAfter: 7)
        limiting.session.readRetries = 0
        let limited = try Self.pass(remote, limiting, from: nil)
        let rateLimited = try #require(limited.error, "\(kind): a 429 ended the pass without an error")
        #expect(rateLimited.kind == .rateLimited, "\(kind): \(rateLimited)")
        #expect(rateLimited.retryAfter == .seconds(7), "\(kind): \(rateLimited)")
        #expect(limited.batches.isEmpty && limited.callsAfterEnd == 0)
    }

    // MARK: - Helpers

    static func pass(_ remote: any ContractRemote, _ store: StoreConfiguration, from cursor: String?,
                     _ configure: (SourceRun) -> Void = { _ in }) throws -> CollectedPass {
        let box = UncheckedBox(remote)
        let run = SourceRun(store: store, plan: PassPlan(cursor: cursor, reconcile: false)) { _, source in box.value.prepare(source) }
        configure(run)
        return try run.runToCompletion()
    }

    static func expectClean(_ pass: CollectedPass, _ what: String) throws {
        #expect(pass.error == nil, "\(what): \(pass.error.map { "\($0)" } ?? "")")
        #expect(pass.outcome != nil, "\(what) did not finish")
        #expect(pass.offLoopCalls == 0, "\(what): sink calls off the pass's loop")
        #expect(pass.callsAfterEnd == 0, "\(what): sink calls after the end")
        #expect(pass.problems.isEmpty, "\(what): problems \(pass.problems)")
    }

    /// Where to cut a pass of `count` batches: after the first, in the middle, before the last.
    static func cuts(_ count: Int) -> [Int] {
        guard count > 1 else { return [] }
        return Array(Set([1, count / 2, count - 1])).filter { (1..<count).contains($0) }.sorted()
    }
}

/// A replica of one store in a temporary file, merged batch by batch as a pass would.
final class ContractReplica {
    private let directory: TemporaryDirectory
    private let database: ReplicaDatabase
    private let name: String

    init(_ store: StoreConfiguration) throws {
        directory = try TemporaryDirectory("ferry-contract")
        database = try ReplicaDatabase(path: directory.path("replica.db"))
        name = store.name
        try database.prepare(StoreDefinition(store))
    }

    deinit { database.close() }

    func apply(_ batches: [ChangeBatch]) throws -> MergeCounts {
        try batches.reduce(MergeCounts()) { $0 + (try database.apply($1, to: name)) }
    }

    func rows() throws -> [String: String] { try database.rows(of: name) }

    func cursor() throws -> String? { try database.syncState(of: name)?.cursor }
}

/// Carries a test's fixture into a pass's configure closure, which runs on the pass's loop
/// while the test thread waits.
private struct UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

extension MergeCounts {
    /// Rows the merge changed.
    var changed: Int { inserted + updated + deleted }
}
