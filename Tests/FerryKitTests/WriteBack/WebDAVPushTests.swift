import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// Local SQL writes pushed to Radicale and Xandikos by real passes: a card inserted without
/// an id is created under its UID's name with `If-None-Match: *`, an update is a `PUT` with
/// `If-Match`, a delete a `DELETE` with `If-Match`; a card changed on the server meanwhile is a
/// conflict, never overwritten; the next pull reports nothing of what was pushed.
@Suite("Pushing to CardDAV and CalDAV", .serialized,
       .enabled(if: DAVServer.shouldRun, "radicale/xandikos not installed: pip install radicale xandikos into $FERRY_VENV"))
struct WebDAVPushTests {
    struct Setup {
        let server: DAVServer
        let directory: TemporaryDirectory
        let database: SharedDatabase
        let store: StoreConfiguration

        func pass(pull: Bool = true) throws -> PassReport {
            try ParsePushTests.run(store, database, pull: pull).get()
        }

        func client() throws -> SQLiteConnection {
            try SQLiteConnection(path: directory.path("replica.db"), mode: .readWrite)
        }

        func row(_ id: String) throws -> String? {
            try database.write { try $0.body(of: id, in: store.name) }
        }

        /// A card inserted by `other` whose create a push sent, and the server stored under
        /// `<uid>.vcf`, before a kill lost the answer: its queued change.
        func createSentBeforeACrash(_ card: String, uid: String, by other: SQLiteConnection) throws -> LocalChange {
            try other.execute("INSERT INTO contacts(body) VALUES (\(literal(card)))")
            let change = try #require(try database.write { try $0.queuedLocalChanges(of: "contacts") }.first)
            return try createSent(card, uid: uid, change: change)
        }

        /// Records `change`'s create as sent, naming member `<uid>.vcf` as a push does, `ago`
        /// seconds back, and puts it on the server.
        func createSent(_ card: String, uid: String, change: LocalChange, ago: TimeInterval = 0) throws -> LocalChange {
            _ = try database.write { try $0.noteCreateSent(change, body: card, remoteID: uid + ".vcf", of: "contacts", at: Date().addingTimeInterval(-ago)) }
            try server.put(server.addressBookPath + uid + ".vcf", card)
            return change
        }

        func ids() throws -> [String] {
            try database.write { database in try database.rows(of: store.name) }.keys.sorted()
        }
    }

    static func setUp(_ kind: DAVServer.Kind, _ storeKind: StoreKind = .carddav, conflict: ConflictPolicy = .hold) throws -> Setup {
        let server = try DAVServer(kind, cards: 4, events: 3)
        let directory = try TemporaryDirectory()
        let database = try SharedDatabase(path: directory.path("replica.db"))
        var store = server.store(storeKind, name: storeKind == .caldav ? "calendar" : "contacts")
        store.writeBack = WriteBackConfiguration(push: true, conflict: conflict)
        let setup = Setup(server: server, directory: directory, database: database, store: store)
        _ = try setup.pass()
        return setup
    }

    @Test(arguments: DAVServer.Kind.allCases)
    func createUpdateAndDeleteArrive_andTheNextPullReportsNothing(_ kind: DAVServer.Kind) throws {
        let setup = try Self.setUp(kind)
        defer { setup.server.stop(); setup.database.close() }
        let other = try setup.client()
        defer { other.close() }
        let card = DAVServer.vCard(uid: "made-here-1", name: "Made Here", email: "made@example.com")
        try other.execute("INSERT INTO contacts(body) VALUES (\(literal(card)))")
        try other.execute("UPDATE contacts SET body = replace(body, 'FN:Person 1', 'FN:Person One') WHERE id = 'card-1.vcf'")
        try other.execute("DELETE FROM contacts WHERE id = 'card-2.vcf'")

        let report = try setup.pass()
        #expect(report.push.pushed == 3, "\(report.summary)")
        #expect(report.counts.inserted + report.counts.updated + report.counts.deleted == 0, "the pull found nothing new: \(report.summary)")
        #expect(report.isComplete)
        let path = setup.server.addressBookPath
        #expect(normalizedLines(try setup.server.get(path + "made-here-1.vcf")) == normalizedLines(card))
        #expect(try setup.server.get(path + "card-1.vcf").contains("FN:Person One"))
        #expect(throws: (any Error).self) { try setup.server.get(path + "card-2.vcf") }
        #expect(try setup.ids() == ["card-0.vcf", "card-1.vcf", "card-3.vcf", "made-here-1.vcf"])
        #expect(try setup.database.write { try $0.outboxSummary(of: "contacts") }.isEmpty)
        // The extracted fields follow the pushed card.
        #expect(try setup.database.write { try $0.connection.scalarText("SELECT fields FROM contacts WHERE id = 'made-here-1.vcf'") }?.contains("made@example.com") == true)

        let again = try setup.pass()
        #expect(again.push.isEmpty)
        #expect(again.counts.inserted + again.counts.updated + again.counts.deleted == 0)
    }

    /// A sync-collection report from a token older than a create may leave out a member made
    /// and deleted since (Xandikos diffs two trees, neither holding it): the row a push made is
    /// confirmed by the next pull, not taken on the push's word.
    @Test(arguments: DAVServer.Kind.allCases)
    func aCreateDeletedOnTheServerBeforeThePull_isGoneHereToo(_ kind: DAVServer.Kind) throws {
        let setup = try Self.setUp(kind)
        defer { setup.server.stop(); setup.database.close() }
        let other = try setup.client()
        defer { other.close() }
        let card = DAVServer.vCard(uid: "short-lived", name: "Short Lived", email: "short@example.com")
        try other.execute("INSERT INTO contacts(body) VALUES (\(literal(card)))")
        let push = try setup.pass(pull: false)
        #expect(push.push.pushed == 1, "\(push.summary)")
        #expect(try setup.ids().contains("short-lived.vcf"))
        try setup.server.delete(setup.server.addressBookPath + "short-lived.vcf")

        let report = try setup.pass()
        #expect(!(try setup.ids().contains("short-lived.vcf")), "deleted on the server: \(report.summary)")
        #expect(report.isComplete, "\(report.gaps)")
        #expect(try setup.database.write { try $0.pendingRecordIDs(of: "contacts") }.isEmpty)
    }

    /// `ferry push` of a create (no pull after it): the replica holds what the push wrote, so
    /// `ferry status` says `ok`, not `incomplete` with no reason, while the create waits for the
    /// next pull to read it back; that pull confirms it and leaves nothing waiting.
    @Test(arguments: [DAVServer.Kind.radicale])
    func aPushsOwnCreateIsNotMissing(_ kind: DAVServer.Kind) throws {
        let setup = try Self.setUp(kind)
        defer { setup.server.stop(); setup.database.close() }
        let other = try setup.client()
        defer { other.close() }
        try other.execute("INSERT INTO contacts(body) VALUES (\(literal(DAVServer.vCard(uid: "made-here", name: "Made Here", email: "here@example.com"))))")
        let push = try setup.pass(pull: false)
        #expect(push.push.pushed == 1, "\(push.summary)")
        let state = try #require(try setup.database.write { try $0.syncState(of: "contacts") })
        #expect(state.createsToReadBack == 1 && state.pendingRecords == 0, "\(state)")
        let row = StoreStatus(store: "contacts", kind: "carddav", state: state, now: Date())
        #expect(row.state == "ok" && row.incomplete == nil, "\(row)")
        #expect(StoreStatus.checkExitCode([row]) == .success)

        let pull = try setup.pass()
        #expect(pull.isComplete, "\(pull.gaps)")
        #expect(try setup.ids().contains("made-here.vcf"))
        #expect(try setup.database.write { try $0.syncState(of: "contacts") }.map { $0.createsToReadBack + $0.pendingRecords } == 0)
    }

    @Test(arguments: DAVServer.Kind.allCases)
    func anEventIsCreatedUnderItsUID(_ kind: DAVServer.Kind) throws {
        let setup = try Self.setUp(kind, .caldav)
        defer { setup.server.stop(); setup.database.close() }
        let other = try setup.client()
        defer { other.close() }
        let event = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Ferry//Test//EN\r\nBEGIN:VEVENT\r\nUID:local-event-1\r\nDTSTAMP:20240101T000000Z\r\nDTSTART:20240105T100000Z\r\nDTEND:20240105T110000Z\r\nSUMMARY:Made here\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
        try other.execute("INSERT INTO calendar(body) VALUES (\(literal(event)))")
        let report = try setup.pass()
        #expect(report.push.pushed == 1, "\(report.summary)")
        #expect(try setup.server.get(setup.server.calendarPath + "local-event-1.ics").contains("SUMMARY:Made here"))
        #expect(try setup.ids().contains("local-event-1.ics"))
    }

    @Test(arguments: DAVServer.Kind.allCases, [ConflictPolicy.hold, .remoteWins, .localWins, .keepBoth])
    func aCardChangedOnTheServerMeanwhileIsAConflict(_ kind: DAVServer.Kind, _ policy: ConflictPolicy) throws {
        let setup = try Self.setUp(kind, conflict: policy)
        defer { setup.server.stop(); setup.database.close() }
        let path = setup.server.addressBookPath
        let other = try setup.client()
        defer { other.close() }
        try other.execute("UPDATE contacts SET body = replace(body, 'FN:Person 0', 'FN:Ours') WHERE id = 'card-0.vcf'")
        let theirs = DAVServer.vCard(uid: "ferry-card-0", name: "Theirs", email: "person-0@example.com")
        try setup.server.put(path + "card-0.vcf", theirs)

        let report = try setup.pass()
        let conflicts = try setup.database.write { try $0.conflicts(of: "contacts", all: true) }
        #expect(conflicts.count == 1, "\(report.summary)")
        #expect(conflicts.first?.localBody?.contains("FN:Ours") == true)
        #expect(conflicts.first?.remoteBody?.contains("FN:Theirs") == true)
        let server = try setup.server.get(path + "card-0.vcf")
        let row = try setup.row("card-0.vcf") ?? ""
        switch policy {
        case .hold:
            #expect(server.contains("FN:Theirs"), "a held conflict overwrites nothing")
            #expect(row.contains("FN:Ours"))
            #expect(!report.isComplete)
        case .remoteWins:
            #expect(server.contains("FN:Theirs"))
            #expect(row.contains("FN:Theirs"))
        case .localWins:
            #expect(server.contains("FN:Ours"))
            #expect(row.contains("FN:Ours"))
        case .keepBoth:
            #expect(server.contains("FN:Theirs"))
            #expect(row.contains("FN:Theirs"))
            let copies = try setup.database.write { try $0.connection.textRows("SELECT id FROM contacts WHERE body LIKE '%FN:Ours%'") }
            #expect(copies.count == 1, "the local version is a new card: \(copies)")
            if let copy = copies.first {
                #expect(try setup.server.get(path + copy).contains("FN:Ours"))
                #expect(!(try setup.row(copy) ?? "").contains("UID:ferry-card-0"), "with a UID of its own")
            }
        }
        if policy != .hold {
            #expect(report.isComplete, "\(report.gaps)")
            #expect(try setup.database.write { try $0.outboxSummary(of: "contacts") }.isEmpty)
        }
    }

    @Test(arguments: DAVServer.Kind.allCases)
    func aCardDeletedOnTheServerWhileChangedHereIsAConflict(_ kind: DAVServer.Kind) throws {
        let setup = try Self.setUp(kind)
        defer { setup.server.stop(); setup.database.close() }
        let other = try setup.client()
        defer { other.close() }
        try other.execute("UPDATE contacts SET body = replace(body, 'FN:Person 3', 'FN:Kept') WHERE id = 'card-3.vcf'")
        try setup.server.delete(setup.server.addressBookPath + "card-3.vcf")
        let report = try setup.pass()
        let conflict = try #require(try setup.database.write { try $0.conflicts(of: "contacts") }.first)
        #expect(conflict.remoteBody == nil, "deleted on the remote")
        #expect(try setup.row("card-3.vcf")?.contains("FN:Kept") == true, "nothing local is lost while held")
        #expect(report.gaps == [.localChangesNotPushed(queued: 0, held: 1, refused: 0, reason: nil)])
        // Keeping the local version creates the card again.
        _ = try setup.database.write { try $0.chooseResolution(.rebaseLocal, conflict: conflict.conflictID) }
        let resolved = try setup.pass()
        #expect(resolved.isComplete, "\(resolved.gaps)")
        #expect(try setup.server.get(setup.server.addressBookPath + "card-3.vcf").contains("FN:Kept"))
    }

    @Test(arguments: DAVServer.Kind.allCases)
    func aCreateSentBeforeACrashIsTheSameMember(_ kind: DAVServer.Kind) throws {
        let setup = try Self.setUp(kind)
        defer { setup.server.stop(); setup.database.close() }
        let other = try setup.client()
        defer { other.close() }
        let card = DAVServer.vCard(uid: "sent-once", name: "Sent Once", email: "once@example.com")
        try other.execute("INSERT INTO contacts(body) VALUES (\(literal(card)))")
        // As a push killed after the server stored it leaves things.
        try setup.server.put(setup.server.addressBookPath + "sent-once.vcf", card)
        let report = try setup.pass()
        #expect(report.push.pushed == 1, "\(report.summary)")
        #expect(report.push.conflicts == 0)
        #expect(try setup.ids().filter { $0.contains("sent-once") || $0.hasPrefix("local-") } == ["sent-once.vcf"])
    }

    @Test(arguments: DAVServer.Kind.allCases)
    func anUpdateTheServerTookBeforeACrashIsNoConflict(_ kind: DAVServer.Kind) throws {
        let setup = try Self.setUp(kind)
        defer { setup.server.stop(); setup.database.close() }
        let other = try setup.client()
        defer { other.close() }
        try other.execute("UPDATE contacts SET body = replace(body, 'FN:Person 2', 'FN:Sent Once') WHERE id = 'card-2.vcf'")
        // The killed push's PUT arrived: the server holds this text under a new ETag.
        let body = try #require(try setup.row("card-2.vcf"))
        try setup.server.put(setup.server.addressBookPath + "card-2.vcf", body)
        let report = try setup.pass()
        #expect(report.push.conflicts == 0, "\(report.summary)")
        #expect(report.push.pushed == 1)
        #expect(report.isComplete)
    }

    @Test(arguments: DAVServer.Kind.allCases)
    func aCreateTheServerTookBeforeACrash_andChangedHereSince_isUpdated(_ kind: DAVServer.Kind) throws {
        let setup = try Self.setUp(kind)
        defer { setup.server.stop(); setup.database.close() }
        let other = try setup.client()
        defer { other.close() }
        let first = DAVServer.vCard(uid: "sent-then-changed", name: "First", email: "first@example.com")
        let change = try setup.createSentBeforeACrash(first, uid: "sent-then-changed", by: other)
        try other.execute("UPDATE contacts SET body = replace(body, 'FN:First', 'FN:Second') WHERE id = \(literal(change.id))")
        let report = try setup.pass()
        #expect(report.push.conflicts == 0, "\(report.summary)")
        #expect(try setup.server.get(setup.server.addressBookPath + "sent-then-changed.vcf").contains("FN:Second"))
        #expect(try setup.ids().filter { $0.contains("sent-then-changed") || $0.hasPrefix("local-") } == ["sent-then-changed.vcf"])
        #expect(report.isComplete)
    }

    @Test(arguments: DAVServer.Kind.allCases)
    func aCreateTheServerTookBeforeACrash_andDeletedHereSince_isDeletedThere(_ kind: DAVServer.Kind) throws {
        let setup = try Self.setUp(kind)
        defer { setup.server.stop(); setup.database.close() }
        let other = try setup.client()
        defer { other.close() }
        let card = DAVServer.vCard(uid: "sent-then-deleted", name: "Gone Soon", email: "gone@example.com")
        let change = try setup.createSentBeforeACrash(card, uid: "sent-then-deleted", by: other)
        try other.execute("DELETE FROM contacts WHERE id = \(literal(change.id))")
        let report = try setup.pass()
        #expect(report.push.conflicts == 0, "\(report.summary)")
        #expect((try? setup.server.get(setup.server.addressBookPath + "sent-then-deleted.vcf")) == nil, "what the lost send made is gone")
        #expect(try setup.ids().filter { $0.contains("sent-then-deleted") || $0.hasPrefix("local-") } == [])
        #expect(report.isComplete, "\(report.summary)")
    }

    /// A create the server took before a crash, deleted there by another client before any
    /// pull: the push waits for a pull, whose sync report lists the member removed where the
    /// server says so (Radicale, DAViCal, SOGo), and the delete then meets the create as a
    /// conflict. A server whose report leaves out a member made and deleted since its token
    /// (Xandikos), or that has no report (sabre/dav), shows nothing: to the replica it never
    /// arrived, and it is made again.
    @Test(arguments: DAVServer.Kind.allCases)
    func aCreateTheServerTookBeforeACrash_deletedThereBeforeAPull_meetsTheDelete(_ kind: DAVServer.Kind) throws {
        let setup = try Self.setUp(kind)
        defer { setup.server.stop(); setup.database.close() }
        let other = try setup.client()
        defer { other.close() }
        let card = DAVServer.vCard(uid: "made-then-deleted-there", name: "Made Here", email: "made@example.com")
        try other.execute("INSERT INTO contacts(body) VALUES (\(literal(card)))")
        let change = try #require(try setup.database.write { try $0.queuedLocalChanges(of: "contacts") }.first)
        // Sent long enough ago that it can no longer be at work on the server, after the last
        // pull (moved back for it).
        try other.execute("UPDATE ferry_sync_state SET last_success = last_success - \(LocalChange.sendSettle + 60)")
        _ = try setup.createSent(card, uid: "made-then-deleted-there", change: change, ago: LocalChange.sendSettle + 5)
        let member = setup.server.addressBookPath + "made-then-deleted-there.vcf"
        try setup.server.delete(member)
        let first = try setup.pass()
        #expect(first.push.pushed == 0 && first.push.conflicts == 0, "it waits for a pull: \(first.summary)")
        #expect((try? setup.server.get(member)) == nil, "not made again before a pull looked")
        let second = try setup.pass()
        let traced = ![.xandikos, .sabredav].contains(kind)
        if traced {
            #expect(second.push.conflicts == 1, "\(kind): \(second.summary)")
            let held = try setup.database.write { try $0.conflicts(of: "contacts") }
            #expect(held.count == 1 && held.first?.localOperation == .create, "\(held)")
            #expect((try? setup.server.get(member)) == nil, "held: the other client's delete stands")
        } else {
            #expect(second.push.pushed == 1 && second.push.conflicts == 0, "\(kind): \(second.summary)")
            #expect(try setup.server.get(member).contains("FN:Made Here"))
        }
    }

    @Test(arguments: DAVServer.Kind.allCases)
    func aCreateTheServerTookBeforeACrash_deletedHere_andChangedThere_isAConflict(_ kind: DAVServer.Kind) throws {
        let setup = try Self.setUp(kind)
        defer { setup.server.stop(); setup.database.close() }
        let other = try setup.client()
        defer { other.close() }
        let card = DAVServer.vCard(uid: "deleted-here-changed-there", name: "Made Here", email: "made@example.com")
        let change = try setup.createSentBeforeACrash(card, uid: "deleted-here-changed-there", by: other)
        let member = setup.server.addressBookPath + "deleted-here-changed-there.vcf"
        try setup.server.put(member, card.replacingOccurrences(of: "FN:Made Here", with: "FN:Changed There"))
        try other.execute("DELETE FROM contacts WHERE id = \(literal(change.id))")
        let report = try setup.pass()
        #expect(report.push.conflicts == 1, "\(report.summary)")
        #expect(try setup.server.get(member).contains("FN:Changed There"), "another's change is not erased by the delete")
        let held = try setup.database.write { try $0.conflicts(of: "contacts") }
        #expect(held.map(\.id) == ["deleted-here-changed-there.vcf"])
        #expect(held.first?.localOperation == .delete)
        #expect(!report.isComplete)
    }
}
