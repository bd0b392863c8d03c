import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// A local insert of a card whose UID another client has just created on the server: the
/// create meets that member (412 on `If-None-Match: *`) and is a conflict. Whatever decides it
/// (the store's policy, or a person later), the replica ends with one row per member, the
/// server's id, `fields` filled, and equal to what a fresh replica of the server holds; the
/// local placeholder never outlives the decision.
@Suite("A local create meets a member another client made", .serialized,
       .enabled(if: DAVServer.shouldRun, "radicale/xandikos not installed: pip install radicale xandikos into $FERRY_VENV"))
struct CreateCollisionTests {
    static let uid = "made-on-both-sides"

    /// The local insert and the other client's member, before any pass has seen either.
    static func collide(_ setup: WebDAVPushTests.Setup) throws {
        let other = try setup.client()
        defer { other.close() }
        let ours = DAVServer.vCard(uid: uid, name: "Ours", email: "ours@example.com")
        try other.execute("INSERT INTO contacts(body) VALUES (\(literal(ours)))")
        let theirs = DAVServer.vCard(uid: uid, name: "Theirs", email: "theirs@example.com")
        try setup.server.put(setup.server.addressBookPath + uid + ".vcf", theirs)
    }

    /// What the replica must be once it settled: no placeholder, no row without fields, the
    /// same members and texts as a replica made afresh from the server.
    static func expectSettled(_ setup: WebDAVPushTests.Setup, _ context: String) throws {
        let rows = try setup.database.write { try $0.liveBodies(of: "contacts") }
        #expect(rows.keys.filter { $0.hasPrefix("local-") }.isEmpty, "no placeholder survives its resolution (\(context)): \(rows.keys.sorted())")
        let unfilled = try setup.database.write { try $0.connection.textRows("SELECT id FROM contacts WHERE fields IS NULL") }
        #expect(unfilled.isEmpty, "fields filled for every row (\(context)): \(unfilled)")
        let fresh = try WebDAVPushTests.freshReplica(of: setup)
        #expect(rows.keys.sorted() == fresh.keys.sorted(), "one row per member (\(context))")
        for (id, body) in fresh {
            #expect(normalizedLines(rows[id] ?? "") == normalizedLines(body), "\(id) as the server holds it (\(context))")
        }
        #expect(try setup.database.write { try $0.outboxSummary(of: "contacts") }.isEmpty, "nothing left to push (\(context))")
    }

    @Test(arguments: DAVServer.Kind.available, [ConflictPolicy.remoteWins, .localWins, .keepBoth])
    func aPolicyEndsInOneRowPerMember(_ kind: DAVServer.Kind, _ policy: ConflictPolicy) throws {
        let setup = try WebDAVPushTests.setUp(kind, conflict: policy)
        defer { setup.server.stop(); setup.database.close() }
        try Self.collide(setup)
        let first = try setup.pass()
        #expect(first.push.conflicts == 1, "\(first.summary)")
        let second = try setup.pass()
        #expect(second.push.conflicts == 0, "a decided collision is not met again: \(second.summary)")
        #expect(second.isComplete, "\(second.gaps)")
        try Self.expectSettled(setup, "\(kind) \(policy)")
        let member = try setup.server.get(setup.server.addressBookPath + Self.uid + ".vcf")
        switch policy {
        case .localWins: #expect(member.contains("FN:Ours"))
        case .remoteWins, .keepBoth: #expect(member.contains("FN:Theirs"))
        case .hold: break
        }
        if policy == .keepBoth {
            let copies = try setup.database.write { try $0.connection.textRows("SELECT id FROM contacts WHERE body LIKE '%FN:Ours%'") }
            #expect(copies.count == 1, "our version is a card of its own: \(copies)")
        }
        let conflicts = try setup.database.write { try $0.conflicts(of: "contacts", all: true) }
        #expect(conflicts.map(\.id) == [Self.uid + ".vcf"], "recorded under the member's id")
    }

    @Test(arguments: DAVServer.Kind.available, [ConflictPlan.Resolution.takeRemote, .rebaseLocal, .keepBoth])
    func aHeldCollisionResolvedEndsInOneRowPerMember(_ kind: DAVServer.Kind, _ resolution: ConflictPlan.Resolution) throws {
        let setup = try WebDAVPushTests.setUp(kind, conflict: .hold)
        defer { setup.server.stop(); setup.database.close() }
        try Self.collide(setup)
        let held = try setup.pass()
        #expect(held.push.conflicts == 1, "\(held.summary)")
        #expect(!held.isComplete)
        let conflict = try #require(try setup.database.write { try $0.conflicts(of: "contacts") }.first)
        #expect(conflict.id == Self.uid + ".vcf")
        #expect(try setup.database.write { try $0.chooseResolution(resolution, conflict: conflict.conflictID) })
        _ = try setup.pass()
        let settled = try setup.pass()
        #expect(settled.push.conflicts == 0, "\(settled.summary)")
        #expect(settled.isComplete, "\(settled.gaps)")
        try Self.expectSettled(setup, "\(kind) \(resolution)")
        let member = try setup.server.get(setup.server.addressBookPath + Self.uid + ".vcf")
        #expect(member.contains(resolution == .rebaseLocal ? "FN:Ours" : "FN:Theirs"))
    }

    /// The member another client made is deleted while the collision is held: choosing the
    /// remote side then deletes the row, choosing ours creates it.
    @Test(arguments: DAVServer.Kind.available, [ConflictPlan.Resolution.takeRemote, .rebaseLocal])
    func aHeldCollisionWhoseMemberWentFollowsTheChoice(_ kind: DAVServer.Kind, _ resolution: ConflictPlan.Resolution) throws {
        let setup = try WebDAVPushTests.setUp(kind, conflict: .hold)
        defer { setup.server.stop(); setup.database.close() }
        try Self.collide(setup)
        _ = try setup.pass()
        try setup.server.delete(setup.server.addressBookPath + Self.uid + ".vcf")
        _ = try setup.pass()
        let conflict = try #require(try setup.database.write { try $0.conflicts(of: "contacts") }.first)
        #expect(conflict.remoteBody == nil, "the held conflict follows the member's delete")
        #expect(try setup.database.write { try $0.chooseResolution(resolution, conflict: conflict.conflictID) })
        _ = try setup.pass()
        let settled = try setup.pass()
        #expect(settled.isComplete, "\(settled.gaps)")
        try Self.expectSettled(setup, "\(kind) \(resolution)")
        let member = try? setup.server.get(setup.server.addressBookPath + Self.uid + ".vcf")
        if resolution == .rebaseLocal { #expect(member?.contains("FN:Ours") == true) } else { #expect(member == nil) }
    }
}

extension WebDAVPushTests {
    /// The store's records as a replica made afresh from the server holds them: the oracle a
    /// two-way test compares with, whatever happened before.
    static func freshReplica(of setup: Setup) throws -> [String: String] {
        let directory = try TemporaryDirectory()
        let database = try SharedDatabase(path: directory.path("fresh.db"))
        defer { database.close() }
        var store = setup.store
        store.writeBack = WriteBackConfiguration()
        _ = try ParsePushTests.run(store, database).get()
        return try database.write { try $0.liveBodies(of: store.name) }
    }
}

/// A UID with characters a member name cannot carry as they are (`?`, `#`, space, `%`, `/`,
/// non-ASCII): the member's name is made so that the server lists it back as the same id, so
/// the next pull reports nothing and a rebuild keeps the row.
@Suite("Member names made from any UID", .serialized,
       .enabled(if: DAVServer.shouldRun, "radicale/xandikos not installed: pip install radicale xandikos into $FERRY_VENV"))
struct MemberNameTests {
    static let uids = ["what?now", "hash#tag", "with space", "per%cent", "slash/ed", "ünï-cödé", "plain-uid_1.2@example.com"]

    @Test(arguments: DAVServer.Kind.available)
    func aCardPushedUnderAnyUIDIsTheSameRecordWhenListedBack(_ kind: DAVServer.Kind) throws {
        let setup = try WebDAVPushTests.setUp(kind)
        defer { setup.server.stop(); setup.database.close() }
        let other = try setup.client()
        defer { other.close() }
        for (index, uid) in Self.uids.enumerated() {
            let card = DAVServer.vCard(uid: uid, name: "Odd \(index)", email: "odd\(index)@example.com")
            try other.execute("INSERT INTO contacts(body) VALUES (\(literal(card)))")
        }
        let pushed = try setup.pass()
        #expect(pushed.push.pushed == Self.uids.count, "\(kind): \(pushed.summary)")
        let again = try setup.pass()
        #expect(again.counts.inserted + again.counts.updated + again.counts.deleted == 0, "\(kind): no phantom change: \(again.summary)")
        let ids = try setup.ids()
        #expect(ids.count == 4 + Self.uids.count, "\(kind): \(ids)")
        #expect(try WebDAVPushTests.freshReplica(of: setup).keys.sorted() == ids, "\(kind): the ids a fresh replica has")
        // A rebuild keeps every row: the server lists each under the id it has here.
        var store = setup.store
        store.writeBack = WriteBackConfiguration(push: true)
        _ = try PassRun.run(store, setup.database, trigger: .onDemand, reconcile: true, resync: true, number: 9)
        #expect(try setup.ids() == ids, "\(kind): a rebuild deletes none of them")
        // The plain UID keeps its name.
        #expect(ids.contains("plain-uid_1.2@example.com.vcf"))
    }
}
