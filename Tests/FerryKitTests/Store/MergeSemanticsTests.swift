import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

@Suite("Replica merge semantics")
struct MergeSemanticsTests {
    /// One row of the merge table: the stored state before, one batch, the state after, the counts.
    struct Case: Sendable, CustomStringConvertible {
        var name: String
        var comparison: VersionComparison = .ordered
        var deletion: DeletionPolicy = .hard
        var before: [RecordChange]
        /// Ids deleted in a second batch before the tested one (a batch keeps one change per id).
        var deletedBefore: [String] = []
        var batch: [RecordChange]
        var after: [String: String]
        var counts: (inserted: Int, updated: Int, deleted: Int, unchanged: Int)
        var logged: [String]
        var description: String { name }
    }

    static let cases: [Case] = [
        Case(name: "insert", before: [], batch: [record("a", version: "1")], after: ["a": "1"], counts: (1, 0, 0, 0), logged: ["insert a"]),
        Case(name: "update with newer version", before: [record("a", version: "1")], batch: [record("a", version: "2")], after: ["a": "2"], counts: (0, 1, 0, 0), logged: ["update a"]),
        Case(name: "stale update is ignored", before: [record("a", version: "5")], batch: [record("a", version: "4")], after: ["a": "5"], counts: (0, 0, 0, 1), logged: []),
        Case(name: "integers compare numerically", before: [record("a", version: "9")], batch: [record("a", version: "10")], after: ["a": "10"], counts: (0, 1, 0, 0), logged: ["update a"]),
        Case(name: "timestamps compare as instants", before: [record("a", version: "2024-05-01T10:00:00.000Z")], batch: [record("a", version: "2024-04-30T23:59:59.000Z")], after: ["a": "2024-05-01T10:00:00.000Z"], counts: (0, 0, 0, 1), logged: []),
        Case(name: "same version is a no-op", before: [record("a", version: "3")], batch: [record("a", version: "3")], after: ["a": "3"], counts: (0, 0, 0, 1), logged: []),
        Case(name: "opaque: different etag replaces", comparison: .opaque, before: [record("a", version: "\"zz\"")], batch: [record("a", version: "\"aa\"")], after: ["a": "\"aa\""], counts: (0, 1, 0, 0), logged: ["update a"]),
        Case(name: "opaque: same etag is a no-op", comparison: .opaque, before: [record("a", version: "\"e1\"")], batch: [record("a", version: "\"e1\"")], after: ["a": "\"e1\""], counts: (0, 0, 0, 1), logged: []),
        Case(name: "delete", before: [record("a", version: "1"), record("b", version: "1")], batch: [.delete(id: "a")], after: ["b": "1"], counts: (0, 0, 1, 0), logged: ["delete a"]),
        Case(name: "delete of unknown id", before: [record("b", version: "1")], batch: [.delete(id: "nope")], after: ["b": "1"], counts: (0, 0, 0, 1), logged: []),
        Case(name: "replayed batch is harmless", before: [record("a", version: "2"), .delete(id: "b")], batch: [record("a", version: "2"), .delete(id: "b")], after: ["a": "2"], counts: (0, 0, 0, 2), logged: []),
        Case(name: "duplicate id in batch: last wins", before: [], batch: [record("a", version: "1"), record("a", version: "3"), record("a", version: "2")], after: ["a": "2"], counts: (1, 0, 0, 2), logged: ["insert a"]),
        Case(name: "duplicate id in batch: upsert then delete", before: [], batch: [record("a", version: "1"), .delete(id: "a")], after: [:], counts: (0, 0, 0, 2), logged: []),
        Case(name: "tombstone keeps the row", deletion: .tombstone, before: [record("a", version: "1")], batch: [.delete(id: "a")], after: ["a": "1†"], counts: (0, 0, 1, 0), logged: ["delete a"]),
        Case(name: "tombstone deleted twice", deletion: .tombstone, before: [record("a", version: "1")], deletedBefore: ["a"], batch: [.delete(id: "a")], after: ["a": "1†"], counts: (0, 0, 0, 1), logged: []),
        Case(name: "newer upsert resurrects a tombstone", deletion: .tombstone, before: [record("a", version: "1")], deletedBefore: ["a"], batch: [record("a", version: "2")], after: ["a": "2"], counts: (1, 0, 0, 0), logged: ["insert a"]),
        // Coarse stamps: a second edit inside the stamp's second (or minute) keeps the version.
        Case(name: "same version, other body is an update", before: [record("a", version: "2024-01-15T15:08:00.000Z", "first")], batch: [record("a", version: "2024-01-15T15:08:00.000Z", "second")], after: ["a": "2024-01-15T15:08:00.000Z"], counts: (0, 1, 0, 0), logged: ["update a"]),
        Case(name: "same instant written otherwise, same body: no-op", before: [record("a", version: "2024-01-15T15:08:24Z")], batch: [record("a", version: "2024-01-15T15:08:24.000+0000")], after: ["a": "2024-01-15T15:08:24Z"], counts: (0, 0, 0, 1), logged: []),
        // SOGo's ETags start again at "gcs00000000" when a member is deleted and made again.
        Case(name: "opaque: same etag, other body is an update", comparison: .opaque, before: [record("a", version: "\"e1\"", "first")], batch: [record("a", version: "\"e1\"", "second")], after: ["a": "\"e1\""], counts: (0, 1, 0, 0), logged: ["update a"]),
        Case(name: "an upsert at a tombstone's version brings it back", deletion: .tombstone, before: [record("a", version: "1")], deletedBefore: ["a"], batch: [record("a", version: "1")], after: ["a": "1"], counts: (1, 0, 0, 0), logged: ["insert a"]),
        Case(name: "an older upsert leaves a tombstone", deletion: .tombstone, before: [record("a", version: "2")], deletedBefore: ["a"], batch: [record("a", version: "1")], after: ["a": "2†"], counts: (0, 0, 0, 1), logged: []),
    ]

    @Test(arguments: cases)
    func mergeTable(_ testCase: Case) throws {
        let directory = try TemporaryDirectory()
        let replica = try ReplicaDatabase(path: directory.path("replica.db"))
        defer { replica.close() }
        try replica.prepare(StoreDefinition(name: "items", deletion: testCase.deletion, comparison: testCase.comparison))
        _ = try replica.apply(ChangeBatch(changes: testCase.before, cursor: "before"), to: "items")
        _ = try replica.apply(ChangeBatch(changes: testCase.deletedBefore.map { .delete(id: $0) }, cursor: "before"), to: "items")
        let logBefore = try replica.changes(after: 0, limit: 1000).last?.sequence ?? 0

        let counts = try replica.apply(ChangeBatch(changes: testCase.batch, cursor: "after"), to: "items")

        #expect(try replica.rows(of: "items") == testCase.after)
        #expect(counts.inserted == testCase.counts.inserted)
        #expect(counts.updated == testCase.counts.updated)
        #expect(counts.deleted == testCase.counts.deleted)
        #expect(counts.unchanged == testCase.counts.unchanged)
        let logged = try replica.changes(after: logBefore, limit: 1000).map { "\($0.operation) \($0.id)" }
        #expect(logged == testCase.logged)
        #expect(try replica.syncState(of: "items")?.cursor == "after")
        #expect(try replica.recordCount(of: "items") == testCase.after.values.filter { !$0.hasSuffix("†") }.count)
    }

    /// A card at the ETag the replica holds: another card (a member deleted and made again,
    /// its ETag counter started over) replaces the row; the same card as the server renders it
    /// (properties reordered, refolded, a REV stamped) leaves the row as written.
    @Test(arguments: [
        ("BEGIN:VCARD\nVERSION:3.0\nUID:u1\nFN:Second\nEND:VCARD\n", true),
        ("BEGIN:VCARD\nVERSION:3.0\nFN:First\nUID:u1\nREV:20261207T000000Z\nEND:VCARD\n", false),
    ])
    func aCardAtTheStoredETagReplacesTheRowOnlyWhenItsContentDiffers(incoming: String, replaces: Bool) throws {
        let directory = try TemporaryDirectory()
        let replica = try ReplicaDatabase(path: directory.path("replica.db"))
        defer { replica.close() }
        try replica.prepare(StoreDefinition(name: "cards", comparison: .opaque, localBody: .vcard))
        let written = "BEGIN:VCARD\nVERSION:3.0\nUID:u1\nFN:First\nEND:VCARD\n"
        let etag = "\"gcs00000000\""
        _ = try replica.apply(ChangeBatch(changes: [.upsert(RemoteRecord(id: "u1.vcf", version: etag, body: Data(written.utf8)))], cursor: nil), to: "cards")
        let logBefore = try replica.changes(after: 0, limit: 10).last?.sequence ?? 0
        let counts = try replica.apply(ChangeBatch(changes: [.upsert(RemoteRecord(id: "u1.vcf", version: etag, body: Data(incoming.utf8)))], cursor: nil), to: "cards")
        #expect(counts.updated == (replaces ? 1 : 0))
        #expect(try replica.body(of: "u1.vcf", in: "cards") == (replaces ? incoming : written))
        #expect(try replica.changes(after: logBefore, limit: 10).map { "\($0.operation) \($0.id)" } == (replaces ? ["update u1.vcf"] : []))
    }

    @Test func updateReplacesBodyAndKeepsFirstSeen() throws {
        let directory = try TemporaryDirectory()
        let replica = try ReplicaDatabase(path: directory.path("replica.db"))
        try replica.prepare(StoreDefinition(name: "items"))
        _ = try replica.apply(ChangeBatch(changes: [record("a", version: "1", "old")], cursor: nil), to: "items")
        let firstSeen = try replica.connection.scalarText("SELECT first_seen FROM items WHERE id = 'a'")
        _ = try replica.apply(ChangeBatch(changes: [record("a", version: "2", "new")], cursor: nil), to: "items")
        #expect(try replica.body(of: "a", in: "items") == #"{"id":"a","value":"new"}"#)
        #expect(try replica.connection.scalarText("SELECT first_seen FROM items WHERE id = 'a'") == firstSeen)
        // A nil cursor keeps the stored one (never set here).
        #expect(try replica.syncState(of: "items")?.cursor == nil)
    }

    @Test func badRecordsAreSkippedAndReportedUnderSkip() throws {
        let directory = try TemporaryDirectory()
        let replica = try ReplicaDatabase(path: directory.path("replica.db"))
        try replica.prepare(StoreDefinition(name: "items", badRecordPolicy: .skip, maxRecordBytes: 64))
        let batch = ChangeBatch(changes: [
            record("good", version: "1"),
            .upsert(RemoteRecord(id: "", version: "1", body: Data("{}".utf8))),
            .upsert(RemoteRecord(id: "utf", version: "1", body: Data([0x7B, 0xFF, 0xFE, 0x7D]))),
            .upsert(RemoteRecord(id: "big", version: "1", body: Data(repeating: 0x61, count: 65))),
        ], cursor: "c1", problems: [RecordProblem(position: 7, reason: "id is a number")])
        let counts = try replica.apply(batch, to: "items")
        #expect(counts.inserted == 1)
        #expect(counts.skipped == 4)
        #expect(Set(counts.problems.map(\.position)) == [7, 1, 2, 3])
        #expect(counts.problems.contains { $0.id == "utf" && $0.reason.contains("UTF-8") })
        #expect(counts.problems.contains { $0.id == "big" && $0.reason.contains("65 bytes") })
        #expect(try replica.rows(of: "items") == ["good": "1"])
        #expect(try replica.syncState(of: "items")?.cursor == "c1")
    }

    @Test func vcardFieldsAreStoredAsJSON() throws {
        let directory = try TemporaryDirectory()
        let replica = try ReplicaDatabase(path: directory.path("replica.db"))
        try replica.prepare(StoreDefinition(name: "contacts", comparison: .opaque, columns: [TypedColumn(name: "email", type: .text, path: "$.EMAIL")]))
        let card = "BEGIN:VCARD\r\nVERSION:3.0\r\nUID:u1\r\nEMAIL:a@example.org\r\nEND:VCARD\r\n"
        _ = try replica.apply(ChangeBatch(changes: [.upsert(RemoteRecord(id: "u1", version: "\"e\"", body: Data(card.utf8), fields: ["UID": "u1", "EMAIL": "a@example.org"]))], cursor: "tok"), to: "contacts")
        #expect(try replica.connection.scalarText("SELECT fields FROM contacts") == #"{"EMAIL":"a@example.org","UID":"u1"}"#)
        #expect(try replica.connection.scalarText("SELECT id FROM contacts WHERE email = 'a@example.org'") == "u1")
        #expect(try replica.body(of: "u1", in: "contacts") == card)
    }

    /// The merge switches between insert-first, update-first and read-first by the previous
    /// batch's mix; all three must give the same results and log entries.
    @Test func insertFirstUpdateFirstAndReadFirstAgree() throws {
        let directory = try TemporaryDirectory()
        let replica = try ReplicaDatabase(path: directory.path("replica.db"))
        try replica.prepare(StoreDefinition(name: "items", deletion: .tombstone))
        // Mostly new: the next batch probes with an insert first.
        #expect(try replica.apply(ChangeBatch(changes: (0..<10).map { record("r\($0)", version: "1") }, cursor: nil), to: "items") == MergeCounts(inserted: 10))
        #expect(replica.stores["items"]?.probe == .insert)
        // Updates, a stale one, a delete, one new id, through insert-first.
        let second = try replica.apply(ChangeBatch(changes: (0..<6).map { record("r\($0)", version: "2") } + [record("r6", version: "0"), .delete(id: "r7"), record("n1", version: "1")], cursor: nil), to: "items")
        #expect(second == MergeCounts(inserted: 1, updated: 6, deleted: 1, unchanged: 1))
        #expect(replica.stores["items"]?.probe == .update)
        // The same kinds of change through update-first, plus a resurrected tombstone.
        let third = try replica.apply(ChangeBatch(changes: [record("r0", version: "3"), record("r1", version: "1"), .delete(id: "r8"), record("n2", version: "1"), record("r7", version: "5")], cursor: nil), to: "items")
        #expect(third == MergeCounts(inserted: 2, updated: 1, deleted: 1, unchanged: 1))
        // Mostly unchanged (a sweep reading everything again): the next batch reads first.
        let fourth = try replica.apply(ChangeBatch(changes: [record("r2", version: "2"), record("r3", version: "2"), record("r4", version: "1"), record("r9", version: "3")], cursor: nil), to: "items")
        #expect(fourth == MergeCounts(updated: 1, unchanged: 3))
        #expect(replica.stores["items"]?.probe == .read)
        let fifth = try replica.apply(ChangeBatch(changes: [record("r5", version: "9"), record("r6", version: "1"), record("n3", version: "1"), record("r8", version: "7"), .delete(id: "r9")], cursor: nil), to: "items")
        #expect(fifth == MergeCounts(inserted: 2, updated: 1, deleted: 1, unchanged: 1))
        #expect(try replica.rows(of: "items") == [
            "r0": "3", "r1": "2", "r2": "2", "r3": "2", "r4": "2", "r5": "9", "r6": "1", "r7": "5", "r8": "7", "r9": "3†", "n1": "1", "n2": "1", "n3": "1",
        ])
        let log = try replica.changes(after: 10, limit: 100).map { "\($0.operation) \($0.id)" }
        #expect(log == ["update r0", "update r1", "update r2", "update r3", "update r4", "update r5", "delete r7", "insert n1",
                        "update r0", "delete r8", "insert n2", "insert r7",
                        "update r9",
                        "update r5", "insert n3", "insert r8", "delete r9"])
    }

    @Test func theProbeFollowsTheBatchesMix() {
        #expect(Probe.after(MergeCounts(inserted: 10)) == .insert)
        #expect(Probe.after(MergeCounts(inserted: 5, updated: 3, unchanged: 2)) == .insert)
        #expect(Probe.after(MergeCounts(inserted: 1, updated: 6, unchanged: 1)) == .update)
        #expect(Probe.after(MergeCounts(updated: 2, unchanged: 2)) == .update)
        #expect(Probe.after(MergeCounts(updated: 1, unchanged: 3)) == .read)
        #expect(Probe.after(MergeCounts()) == .insert)
    }

    @Test func applyToUnpreparedStoreFails() throws {
        let directory = try TemporaryDirectory()
        let replica = try ReplicaDatabase(path: directory.path("replica.db"))
        #expect(throws: StoreError.self) { try replica.apply(ChangeBatch(changes: [], cursor: "x"), to: "missing") }
    }
}
