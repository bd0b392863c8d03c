import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// An update the remote applied whose answer never came back (a kill, a dropped connection),
/// then a newer local edit or a delete of the same record: the next push finds its own send on
/// the remote and goes on from there. No conflict is recorded (nobody else wrote), and under
/// `remote-wins` the newer edit is not replaced by the older one. A real change by another
/// writer after the lost send is still a conflict.
@Suite("A lost answer is never a conflict", .serialized)
struct LostAnswerTests {
    enum Then: String, CaseIterable, CustomTestStringConvertible {
        case editedAgain, deleted
        var testDescription: String { rawValue }
    }

    /// Queues `write`, records its update as sent (as a push does before sending), and lets
    /// `apply` put what was sent on the remote: a send that landed, its answer lost.
    static func loseAnswer(to write: String, in database: SharedDatabase, store: String, by other: SQLiteConnection,
                           apply: (LocalChange) throws -> Void) throws {
        try other.execute(write)
        let change = try #require(try database.write { try $0.queuedLocalChanges(of: store) }.first)
        #expect(change.operation == .update)
        try database.write { try $0.noteUpdatesSent([UpdateSend(change, on: change.baseVersion ?? "", body: change.body ?? "")], of: store, at: Date()) }
        try apply(change)
    }

    // MARK: - CardDAV

    @Test(.enabled(if: DAVServer.shouldRun, "radicale/xandikos not installed"),
          arguments: DAVServer.Kind.available, Then.allCases)
    func onCardDAV(_ kind: DAVServer.Kind, _ then: Then) throws {
        for policy in [ConflictPolicy.hold, .remoteWins] {
            let setup = try WebDAVPushTests.setUp(kind, conflict: policy)
            defer { setup.server.stop(); setup.database.close() }
            let other = try setup.client()
            defer { other.close() }
            let member = setup.server.addressBookPath + "card-1.vcf"
            try Self.loseAnswer(to: "UPDATE contacts SET body = replace(body, 'FN:Person 1', 'FN:Sent Once') WHERE id = 'card-1.vcf'",
                                in: setup.database, store: "contacts", by: other) { change in
                try setup.server.put(member, try #require(change.body))
            }
            switch then {
            case .editedAgain: try other.execute("UPDATE contacts SET body = replace(body, 'FN:Sent Once', 'FN:Newer') WHERE id = 'card-1.vcf'")
            case .deleted: try other.execute("DELETE FROM contacts WHERE id = 'card-1.vcf'")
            }
            let report = try setup.pass()
            #expect(report.push.conflicts == 0, "\(kind) \(policy): \(report.summary)")
            #expect(report.isComplete, "\(kind) \(policy): \(report.gaps)")
            switch then {
            case .editedAgain:
                #expect(try setup.server.get(member).contains("FN:Newer"), "\(kind) \(policy): the newer edit is on the server")
                #expect(try setup.row("card-1.vcf")?.contains("FN:Newer") == true, "\(kind) \(policy): and stays here")
            case .deleted:
                #expect((try? setup.server.get(member)) == nil, "\(kind) \(policy): deleted there too")
            }
            #expect(try setup.database.write { try $0.conflicts(of: "contacts", all: true) }.isEmpty)
        }
    }

    /// The control: after the lost send another client changed the card, so the next push meets
    /// a real conflict.
    @Test(.enabled(if: DAVServer.shouldRun, "radicale/xandikos not installed"), arguments: DAVServer.Kind.available)
    func anotherWritersChangeAfterTheLostSendIsStillAConflict(_ kind: DAVServer.Kind) throws {
        let setup = try WebDAVPushTests.setUp(kind, conflict: .hold)
        defer { setup.server.stop(); setup.database.close() }
        let other = try setup.client()
        defer { other.close() }
        let member = setup.server.addressBookPath + "card-1.vcf"
        try Self.loseAnswer(to: "UPDATE contacts SET body = replace(body, 'FN:Person 1', 'FN:Sent Once') WHERE id = 'card-1.vcf'",
                            in: setup.database, store: "contacts", by: other) { change in
            try setup.server.put(member, try #require(change.body).replacingOccurrences(of: "FN:Sent Once", with: "FN:Someone Else"))
        }
        try other.execute("UPDATE contacts SET body = replace(body, 'FN:Sent Once', 'FN:Newer') WHERE id = 'card-1.vcf'")
        let report = try setup.pass()
        #expect(report.push.conflicts == 1, "\(report.summary)")
        #expect(try setup.server.get(member).contains("FN:Someone Else"), "nothing overwritten while held")
    }

    // MARK: - Parse

    @Test(arguments: Then.allCases)
    func onParse(_ then: Then) throws {
        for policy in [ConflictPolicy.hold, .remoteWins] {
            let setup = try ParsePushTests.setUp(objects: 2, conflict: policy)
            defer { setup.database.close() }
            let other = try setup.client()
            defer { other.close() }
            let id = try #require(try setup.remote().keys.sorted().first)
            try Self.loseAnswer(to: "UPDATE quotes SET body = json_set(body, '$.text', 'sent once') WHERE id = '\(id)'",
                                in: setup.database, store: "quotes", by: other) { _ in
                try setup.parse("PUT", "/classes/Quote/\(id)", #"{"text":"sent once"}"#)
            }
            switch then {
            case .editedAgain: try other.execute("UPDATE quotes SET body = json_set(body, '$.text', 'newer') WHERE id = '\(id)'")
            case .deleted: try other.execute("DELETE FROM quotes WHERE id = '\(id)'")
            }
            let report = try setup.pass()
            #expect(report.push.conflicts == 0, "\(policy): \(report.summary)")
            #expect(report.isComplete, "\(policy): \(report.gaps)")
            switch then {
            case .editedAgain:
                #expect(try setup.remote()[id]?["text"] as? String == "newer", "\(policy)")
                #expect(try setup.database.write { try $0.body(of: id, in: "quotes") }?.contains("newer") == true, "\(policy)")
            case .deleted:
                #expect(try setup.remote()[id] == nil, "\(policy): deleted there too")
            }
        }
    }

    // MARK: - JSON API

    @Test(arguments: [true, false], Then.allCases)
    func onAJSONAPI(ifMatch: Bool, _ then: Then) throws {
        for policy in [ConflictPolicy.hold, .remoteWins] {
            let setup = try JSONPushTests.setUp(["conflict": policy.rawValue], ifMatch: ifMatch)
            defer { setup.server.stop(); setup.database.close() }
            let other = try setup.client()
            defer { other.close() }
            try Self.loseAnswer(to: "UPDATE items SET body = json_set(body, '$.name', 'sent once') WHERE id = '3'",
                                in: setup.database, store: "items", by: other) { _ in
                _ = try Shell.run("/usr/bin/curl", ["-sS", "-f", "-X", "PATCH", "-H", "Content-Type: application/merge-patch+json",
                                                    "--data-binary", #"{"name":"sent once"}"#, setup.server.baseURL + "/items/3"])
            }
            switch then {
            case .editedAgain: try other.execute("UPDATE items SET body = json_set(body, '$.name', 'newer') WHERE id = '3'")
            case .deleted: try other.execute("DELETE FROM items WHERE id = '3'")
            }
            let report = try setup.pass()
            #expect(report.push.conflicts == 0, "if-match \(ifMatch) \(policy): \(report.summary)")
            #expect(report.isComplete, "if-match \(ifMatch) \(policy): \(report.gaps)")
            switch then {
            case .editedAgain: #expect(try setup.item(3)?["name"] as? String == "newer", "if-match \(ifMatch) \(policy)")
            case .deleted: #expect(try setup.item(3) == nil, "if-match \(ifMatch) \(policy)")
            }
        }
    }
}
