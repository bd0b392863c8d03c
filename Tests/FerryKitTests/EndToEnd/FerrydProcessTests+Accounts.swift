import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

extension FerrydProcessTests {
    /// ferryd with a `dav-account` store (Radicale): the account's pass finds the collections,
    /// each is scheduled and synced as a store of its own, one created on the server later is
    /// synced after a reload's resync, and `ferry status` lists them all.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: binary("ferryd")) && DAVServer.shouldRun, "build ferryd first and install radicale"))
    func syncsEveryCollectionOfAnAccount() throws {
        let dav = try DAVServer(.radicale, cards: 4, events: 2)
        defer { dav.stop() }
        let configPath = directory.url.path + "/ferry.conf"
        let runtime = directory.url.path + "/run"
        try DAVServer.password.write(toFile: directory.url.path + "/dav-password", atomically: true, encoding: .utf8)
        chmod(directory.url.path + "/dav-password", 0o600)
        try """
            [ferry]
            database = \(directory.url.path)/ferry.db

            [store personal]
            kind = dav-account
            url = \(dav.baseURL)/
            username = \(DAVServer.username)
            password = file:\(directory.url.path)/dav-password
            interval = 1h
            """.write(toFile: configPath, atomically: true, encoding: .utf8)
        let daemon = try launch(Self.binary("ferryd"), ["--config", configPath], runtime: runtime)
        defer { if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) } }

        let books = "personal__contacts", calendar = "personal__calendar"
        try waitFor("both collections synced") { (try? rows(books)) == 4 && (try? rows(calendar)) == 2 }
        #expect(try rows("personal") == 6)

        // A collection created on the server: the resync a reload asks for runs the account's
        // discovery, and the new collection is scheduled and synced at once.
        try DAVAccountServerTests.makeAddressBook(dav, "/ferry/friends/", name: "Friends")
        try dav.put("/ferry/friends/f1.vcf", DAVServer.vCard(uid: "f1", name: "A Friend", email: "f1@example.com"))
        _ = try Shell.run(Self.binary("ferry"), ["reload", "--pid", "\(daemon.processIdentifier)", "--runtime-directory", runtime])
        try waitFor("the new collection synced") { (try? rows("personal__friends")) == 1 }

        let lines = String(decoding: try Shell.run(Self.binary("ferry"), ["status", "--json", "--config", configPath, "--runtime-directory", runtime]), as: UTF8.self)
        let states = try lines.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        }
        let byStore = Dictionary(uniqueKeysWithValues: states.map { ($0["store"] as? String ?? "", $0) })
        #expect(Set(byStore.keys) == ["personal", books, calendar, "personal__friends"])
        #expect(byStore["personal"]?["kind"] as? String == "dav-account")
        #expect(byStore["personal"]?["records"] as? Int == 3)
        #expect(byStore["personal__friends"]?["kind"] as? String == "carddav")
        #expect(states.allSatisfy { $0["state"] as? String == "ok" }, "\(states)")

        kill(daemon.processIdentifier, SIGTERM)
        try waitFor("exit", timeout: 5) { !daemon.isRunning }
        #expect(daemon.terminationStatus == 0)
    }
}
