import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// `ferry push`, `ferry conflicts` and `ferry status` as a person runs them, against Radicale:
/// the exit codes say whether everything was pushed, a held conflict is listed and resolved
/// from the command line, and status counts it meanwhile.
private let ferryBinary = TestServer.repositoryRoot.appendingPathComponent(".build/debug/ferry").path

@Suite("ferry push and ferry conflicts", .serialized,
       .enabled(if: DAVServer.shouldRun && FileManager.default.isExecutableFile(atPath: ferryBinary),
                "radicale not installed, or ferry not built (swift build)"))
struct PushCommandTests {
    static let ferry = ferryBinary

    /// Runs `ferry ARGS`, returning its exit status and standard output.
    static func run(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let outcome = try Shell.outcome(ferry, arguments)
        return (outcome.status, outcome.output)
    }

    /// A configuration with one push store, `contacts`, on `server`'s address book; returns
    /// its path and the replica's.
    static func configuration(for server: DAVServer, in directory: TemporaryDirectory) throws -> (configuration: String, database: String) {
        let password = directory.path("password")
        try DAVServer.password.write(toFile: password, atomically: true, encoding: .utf8)
        chmod(password, 0o600)
        let database = directory.path("ferry.db")
        let configuration = directory.path("ferry.conf")
        try """
            [ferry]
            database = \(database)

            [store contacts]
            kind = carddav
            url = \(server.addressBookURL)
            username = \(DAVServer.username)
            password = file:\(password)
            push = yes
            """.write(toFile: configuration, atomically: true, encoding: .utf8)
        return (configuration, database)
    }

    @Test func pushExitsTwoWhileAConflictIsHeld_andConflictsResolveClearsIt() throws {
        let server = try DAVServer(.radicale, cards: 3, events: 0)
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let (configuration, database) = try Self.configuration(for: server, in: directory)
        #expect(try Self.run(["sync", "-c", configuration]).status == 0)
        let sqlite = try #require(TestTools.executable("sqlite3"))
        func sql(_ statement: String) throws { try Shell.run(sqlite, [database, statement]) }

        try sql("UPDATE contacts SET body = replace(body, 'FN:Person 1', 'FN:Pushed') WHERE id = 'card-1.vcf'")
        let pushed = try Self.run(["push", "-c", configuration, "contacts"])
        #expect(pushed.status == 0)
        #expect(pushed.output.contains("store contacts: pushed 1"), "\(pushed.output)")
        #expect(try server.get(server.addressBookPath + "card-1.vcf").contains("FN:Pushed"))

        // Changed here and there: held, exit 2, listed, counted by status.
        try sql("UPDATE contacts SET body = replace(body, 'FN:Person 2', 'FN:Ours') WHERE id = 'card-2.vcf'")
        try server.put(server.addressBookPath + "card-2.vcf", DAVServer.vCard(uid: "ferry-card-2", name: "Theirs", email: "person-2@example.com"))
        #expect(try Self.run(["push", "-c", configuration]).status == 2)
        let listed = try Self.run(["conflicts", "list", "-c", configuration, "--json"])
        let line = try #require(listed.output.split(separator: "\n").first)
        let conflict = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(conflict["id"] as? String == "card-2.vcf")
        let number = try #require(conflict["conflict_id"] as? Int)
        let status = try Self.run(["status", "-c", configuration, "--json"])
        #expect(status.output.contains(#""conflicts":1"#), "\(status.output)")
        #expect(status.output.contains(#""state":"incomplete""#))

        #expect(try Self.run(["conflicts", "resolve", "\(number)", "--keep", "local", "-c", configuration]).status == 0)
        #expect(try Self.run(["push", "-c", configuration]).status == 0)
        #expect(try server.get(server.addressBookPath + "card-2.vcf").contains("FN:Ours"))
        #expect(try Self.run(["conflicts", "-c", configuration]).output.contains("no open conflicts"))
        // A store that does not push is a usage error for ferry push.
        #expect(try Self.run(["push", "-c", configuration, "nosuch"]).status == 64)
    }

    /// The remote down: `ferry push` exits 69 (as the README and `--help` say) and the store is
    /// failing; the next push that works clears that without waiting for a pull.
    @Test func aPushWithTheRemoteDownExits69_andThePushThatWorksClearsIt() throws {
        let server = try DAVServer(.radicale, cards: 2, events: 0)
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let (configuration, database) = try Self.configuration(for: server, in: directory)
        #expect(try Self.run(["sync", "-c", configuration]).status == 0)
        let sqlite = try #require(TestTools.executable("sqlite3"))
        try Shell.run(sqlite, [database, "UPDATE contacts SET body = replace(body, 'FN:Person 1', 'FN:Pushed') WHERE id = 'card-1.vcf'"])

        let working = try String(contentsOfFile: configuration, encoding: .utf8)
        let port = try Shell.freePort()
        try working.replacingOccurrences(of: server.addressBookURL, with: "http://127.0.0.1:\(port)/nobody/contacts/")
            .write(toFile: configuration, atomically: true, encoding: .utf8)
        let down = try Shell.outcome(Self.ferry, ["push", "-c", configuration])
        #expect(down.status == FerryExitCode.unavailable.rawValue, "\(down.errors)")
        #expect(try Self.run(["status", "-c", configuration, "--json"]).output.contains(#""state":"failing""#))

        try working.write(toFile: configuration, atomically: true, encoding: .utf8)
        #expect(try Self.run(["push", "-c", configuration]).status == 0)
        let status = try Self.run(["status", "-c", configuration, "--json"]).output
        #expect(status.contains(#""state":"ok""#), "\(status)")
        #expect(try server.get(server.addressBookPath + "card-1.vcf").contains("FN:Pushed"))
    }
}
