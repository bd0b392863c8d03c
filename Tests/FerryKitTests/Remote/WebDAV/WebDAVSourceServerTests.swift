import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// One suite, run against both Radicale and Xandikos: they differ in token format, element
/// order, namespace prefixes, line endings and the status of a refused token (403 vs 412).
@Suite("WebDAVSource against Radicale, Xandikos and DAViCal", .enabled(if: DAVServer.shouldRun, "radicale/xandikos not installed: pip install radicale xandikos into $FERRY_VENV (bash scripts/test.sh does)"))
struct WebDAVSourceServerTests {
    static let cardIDs = Set((0..<25).map { "card-\($0).vcf" })

    /// Checks every invariant any pass must keep.
    func expectWellBehaved(_ pass: CollectedPass, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(pass.offLoopCalls == 0, "sink called off the pass's run loop", sourceLocation: sourceLocation)
        #expect(pass.callsAfterEnd == 0, "sink called after the pass ended", sourceLocation: sourceLocation)
        // Only the last batch carries the cursor: a crash mid-pass replays from the old token.
        #expect(pass.batches.dropLast().allSatisfy { $0.cursor == nil }, sourceLocation: sourceLocation)
    }

    @Test(arguments: DAVServer.Kind.allCases)
    func syncsAnAddressBookThenOnlyItsChanges(_ kind: DAVServer.Kind) throws {
        let server = try DAVServer(kind, cards: 25)
        defer { server.stop() }
        let store = server.store(batch: 7)

        // First sync: the listing, then one query for every member's data (25 members are
        // more than one multiget of 7 takes), handed over in one batch with the token.
        let first = try server.pass(store, cursor: nil)
        #expect(first.error == nil, "\(String(describing: first.error))")
        expectWellBehaved(first)
        // The collection check, the listing, the query.
        #expect(first.outcome?.requests == 3)
        #expect(first.upsertCount == 25)
        #expect(first.outcome?.listingComplete == true)
        #expect(Set(first.listed) == Self.cardIDs)
        #expect(first.batches.count == 1)
        #expect(first.problems.isEmpty)
        let records = first.upserts
        #expect(Set(records.keys) == Self.cardIDs)
        for i in 0..<25 {
            let record = try #require(records["card-\(i).vcf"])
            #expect(record.fields == DAVServer.expectedCardFields(i), "card \(i)")
            #expect(record.version.hasPrefix("\"") && record.version.count > 2)
        }
        // Bodies equal what the server serves (by content: Radicale re-serializes).
        for i in [0, 5, 14] {
            let served = try server.get(server.addressBookPath + "card-\(i).vcf")
            let body = String(decoding: try #require(records["card-\(i).vcf"]).body, as: UTF8.self)
            #expect(normalizedLines(body) == normalizedLines(served), "card \(i)")
        }
        let token = try #require(first.finalCursor)

        // Add one, change one, delete one.
        try server.put(server.addressBookPath + "new%20one.vcf", DAVServer.vCard(uid: "ferry-new", name: "New Person", email: "new@example.com"))
        try server.put(server.addressBookPath + "card-3.vcf", DAVServer.vCard(uid: "ferry-card-3", name: "Renamed Three", email: "three@example.com"))
        try server.delete(server.addressBookPath + "card-4.vcf")

        let second = try server.pass(store, cursor: token)
        #expect(second.error == nil, "\(String(describing: second.error))")
        expectWellBehaved(second)
        #expect(Set(second.upserts.keys) == ["new one.vcf", "card-3.vcf"])
        #expect(second.deletes == ["card-4.vcf"])
        #expect(second.upserts["card-3.vcf"]?.fields?["FN"] == "Renamed Three")
        #expect(second.upserts["card-3.vcf"]?.version != records["card-3.vcf"]?.version)
        #expect(second.upserts["new one.vcf"]?.fields?["UID"] == "ferry-new")
        #expect(second.listCalls == 0)
        #expect(second.outcome?.listingComplete == false)
        #expect(second.outcome?.unchanged == false)
        let secondToken = try #require(second.finalCursor)
        #expect(secondToken != token)

        // Nothing changed: one REPORT, one empty batch carrying the (same) token.
        let third = try server.pass(store, cursor: secondToken)
        #expect(third.error == nil)
        expectWellBehaved(third)
        #expect(third.batches.count == 1)
        #expect(third.batches.first?.changes.isEmpty == true)
        #expect(third.finalCursor == secondToken)
        #expect(third.outcome?.unchanged == true)
        #expect(third.outcome?.requests == 1)
    }

    /// Not DAViCal: it never refuses a token, and answers one it does not know with a full
    /// listing that looks like a delta (`Tests/Servers/DAV-SERVERS.md`).
    @Test(arguments: [DAVServer.Kind.radicale, .xandikos])
    func refusedTokenMeansFullResyncWithACompleteListing(_ kind: DAVServer.Kind) throws {
        let server = try DAVServer.shared(kind)
        // Well-formed for each server but unknown to it, and plain garbage.
        let unknown = kind == .radicale ? "http://radicale.org/ns/sync/" + String(repeating: "0", count: 64) : String(repeating: "0", count: 40)
        for stale in [unknown, "garbage-token"] {
            let pass = try server.pass(server.store(batch: 10), cursor: stale)
            #expect(pass.error == nil, "\(String(describing: pass.error))")
            expectWellBehaved(pass)
            #expect(Set(pass.listed) == Self.cardIDs)
            #expect(pass.outcome?.listingComplete == true)
            #expect(Set(pass.upserts.keys) == Self.cardIDs)
            #expect(pass.finalCursor != nil && pass.finalCursor != stale)
            #expect(pass.events.first == "list")
            #expect(pass.events.last == "finish")
        }
    }

    @Test(arguments: DAVServer.Kind.allCases)
    func calendarEventsWithExtractedFields(_ kind: DAVServer.Kind) throws {
        let server = try DAVServer.shared(kind)
        let pass = try server.pass(server.store(.caldav, name: "calendar"), cursor: nil)
        #expect(pass.error == nil, "\(String(describing: pass.error))")
        expectWellBehaved(pass)
        let records = pass.upserts
        #expect(records.count == 5)
        for j in 0..<5 {
            let record = try #require(records["event-\(j).ics"])
            #expect(record.fields == DAVServer.expectedEventFields(j), "event \(j)")
            #expect(String(decoding: record.body, as: UTF8.self).contains("BEGIN:VEVENT"))
        }
        #expect(pass.finalCursor != nil)
    }

    /// The query's records are merged in batches of 1,000, only the last carrying the token.
    @Test(arguments: DAVServer.Kind.allCases)
    func aLargeCollectionArrivesInBatchesOfAThousand(_ kind: DAVServer.Kind) throws {
        let server = try DAVServer.sharedLarge(kind)
        let pass = try server.pass(server.store(), cursor: nil)
        #expect(pass.error == nil, "\(String(describing: pass.error))")
        expectWellBehaved(pass)
        #expect(pass.outcome?.requests == 3)
        #expect(pass.batches.map(\.changes.count) == [1_000, 1_000, 500])
        #expect(pass.upsertCount == 2_500 && pass.upserts.count == 2_500)
        #expect(pass.finalCursor != nil)
        #expect(pass.upserts["card-2499.vcf"]?.fields == DAVServer.expectedCardFields(2_499))
    }

    @Test(arguments: DAVServer.Kind.allCases)
    func cancelMidPassStopsEverySinkCall(_ kind: DAVServer.Kind) throws {
        let server = try DAVServer.sharedLarge(kind)
        let pass = try server.pass(server.store(batch: 3), cursor: nil) { $0.cancelAfterBatches = 1 }
        #expect(pass.batches.count == 1)
        #expect(pass.batches[0].cursor == nil)
        #expect(pass.callsAfterEnd == 0)
        #expect(pass.outcome == nil && pass.error == nil)
    }

    @Test(arguments: DAVServer.Kind.allCases)
    func aThrowingSinkEndsThePassSilently(_ kind: DAVServer.Kind) throws {
        let server = try DAVServer.sharedLarge(kind)
        let pass = try server.pass(server.store(batch: 4), cursor: nil) { $0.failAfterBatches = 2 }
        #expect(pass.batches.count == 2, "\(pass.error.map { "\($0)" } ?? "no error")")
        #expect(pass.callsAfterEnd == 0)
        #expect(pass.outcome == nil && pass.error == nil)
    }

    @Test(arguments: DAVServer.Kind.allCases)
    func aMissingCollectionIsAConfigurationErrorNamingTheURL(_ kind: DAVServer.Kind) throws {
        let server = try DAVServer.shared(kind)
        let url = server.addressBookURL + "nope/"
        let pass = try server.pass(server.store(url: url), cursor: nil)
        let error = try #require(pass.error)
        // Xandikos answers 404; Radicale 403 for a path its rights do not cover: both need a person.
        #expect(error.kind == .configuration || error.kind == .unauthorized, "\(error)")
        #expect(!error.isRetryable)
        #expect(error.store == "contacts")
        #expect(error.url.hasSuffix("nope/"))
        #expect(pass.batches.isEmpty)
        #expect(!String(describing: error).contains(DAVServer.password))
    }

    @Test func wrongPasswordIsUnauthorized() throws {
        let server = try DAVServer.shared(.radicale)
        let pass = try server.pass(server.store(password: "wrong-password"), cursor: nil)
        let error = try #require(pass.error)
        #expect(error.kind == .unauthorized)
        #expect(!error.isRetryable)
        #expect(!String(describing: error).contains("wrong-password"))
        #expect(pass.batches.isEmpty)
    }

    @Test(arguments: DAVServer.Kind.allCases)
    func withoutSyncCollectionFallsBackToPropfind(_ kind: DAVServer.Kind) throws {
        let server = try DAVServer(kind, cards: 12, events: 0, withoutSyncCollection: true)
        defer { server.stop() }
        let pass = try server.pass(server.store(batch: 5), cursor: nil)
        #expect(pass.error == nil, "\(String(describing: pass.error))")
        expectWellBehaved(pass)
        let ids = Set((0..<12).map { "card-\($0).vcf" })
        #expect(Set(pass.listed) == ids)
        #expect(pass.outcome?.listingComplete == true)
        #expect(Set(pass.upserts.keys) == ids)
        #expect(pass.upserts["card-7.vcf"]?.fields == DAVServer.expectedCardFields(7))
        // No token to store: the cursor is left as it was.
        #expect(pass.finalCursor == nil)
    }

    @Test(arguments: DAVServer.Kind.allCases)
    func truncatedAnswersAreNeverTrustedAsComplete(_ kind: DAVServer.Kind) throws {
        let server = try DAVServer(kind, cards: 25, events: 0, truncateSync: 10)
        defer { server.stop() }
        let store = server.store(batch: 100)
        let first = try server.pass(store, cursor: nil)
        #expect(first.error == nil, "\(String(describing: first.error))")
        expectWellBehaved(first)
        // Three partial answers (10 + 10 + 5) followed to the end before anything is fetched.
        #expect(Set(first.upserts.keys) == Self.cardIDs)
        #expect(Set(first.listed) == Self.cardIDs)
        #expect(first.outcome?.listingComplete == true)
        // The collection check, three sync REPORTs (10 + 10 + 5 members), then one multiget: 25 fit in one.
        #expect(first.outcome?.requests == 5)
        // Only the token of the complete answer is ever handed out.
        let token = try #require(first.finalCursor)
        #expect(!token.hasPrefix("ferry-partial:"))

        try server.put(server.addressBookPath + "card-9.vcf", DAVServer.vCard(uid: "ferry-card-9", name: "Nine Again", email: "nine@example.com"))
        let second = try server.pass(store, cursor: token)
        #expect(second.error == nil)
        #expect(Array(second.upserts.keys) == ["card-9.vcf"])
        #expect(second.upserts["card-9.vcf"]?.fields?["FN"] == "Nine Again")
    }

    /// A server that refuses collection queries costs multigets, nothing else.
    @Test(arguments: DAVServer.Kind.allCases, [DAVServer.QueryFault.refuse, .refuseAsUnsupported])
    func aRefusedQueryMeansMultigets(_ kind: DAVServer.Kind, _ fault: DAVServer.QueryFault) throws {
        let server = try DAVServer(kind, cards: 25, events: 0, queryFault: fault)
        defer { server.stop() }
        let pass = try server.pass(server.store(batch: 7), cursor: nil)
        #expect(pass.error == nil, "\(String(describing: pass.error))")
        expectWellBehaved(pass)
        // The collection check, the listing, the refused query, then 4 multigets of at most 7.
        #expect(pass.outcome?.requests == 7)
        #expect(Set(pass.upserts.keys) == Self.cardIDs)
        #expect(pass.upsertCount == 25)
        #expect(pass.upserts["card-17.vcf"]?.fields == DAVServer.expectedCardFields(17))
        #expect(pass.finalCursor != nil)
    }

    /// A query answer is never trusted as a listing: members it leaves out, whether or not it
    /// says it is partial, are multigot, and no member is handed over twice.
    @Test(arguments: DAVServer.Kind.allCases, [DAVServer.QueryFault.subset(keep: 10), .truncate(keep: 10)])
    func membersTheQueryLeftOutAreMultigot(_ kind: DAVServer.Kind, _ fault: DAVServer.QueryFault) throws {
        let server = try DAVServer(kind, cards: 25, events: 0, queryFault: fault)
        defer { server.stop() }
        let pass = try server.pass(server.store(batch: 7), cursor: nil)
        #expect(pass.error == nil, "\(String(describing: pass.error))")
        expectWellBehaved(pass)
        // The collection check, the listing, the query (10 members), then 15 members in 3 multigets.
        #expect(pass.outcome?.requests == 6)
        #expect(Set(pass.upserts.keys) == Self.cardIDs)
        #expect(pass.upsertCount == 25)
        #expect(pass.outcome?.listingComplete == true)
        for i in [0, 9, 10, 24] {
            #expect(pass.upserts["card-\(i).vcf"]?.fields == DAVServer.expectedCardFields(i), "card \(i)")
        }
    }

    @Test func aRefusedConnectionIsATransportError() throws {
        // A port nothing listens on: bind, read the port, close.
        let socket = try ListenBacklogBlackhole()
        let port = socket.port
        socket.close()
        var store = StoreConfiguration(name: "contacts", url: "http://127.0.0.1:\(port)/book/", options: WebDAVOptions(content: .addressBook),
                                       location: ConfigurationLocation(file: "t", line: 1))
        store.session.connectTimeout = 2
        let run = SourceRun(store: store, plan: PassPlan(cursor: nil, reconcile: false))
        let pass = try run.runToCompletion()
        let error = try #require(pass.error)
        #expect(error.kind == .transport(.connection) || error.kind == .transport(.connectTimeout))
        #expect(error.url.contains("127.0.0.1:\(port)"))
    }

    @Test func aStoreBuiltInCodeWithoutACollectionURLIsAConfigurationError() throws {
        let store = StoreConfiguration(name: "contacts", url: "ftp://x/", options: WebDAVOptions(content: .addressBook),
                                       location: ConfigurationLocation(file: "t", line: 1))
        let error = #expect(throws: SyncError.self) { try makeSource(for: store) }
        #expect(error?.kind == .configuration)
    }
}
