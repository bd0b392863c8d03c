import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

extension FerrydProcessTests {
    /// A configuration with one `dav-account` store `personal` at `url` (the test servers'
    /// user and password, from a private file), and `keys` added to its section.
    func accountConfiguration(url: String, keys: [String]) throws -> String {
        let path = directory.url.path + "/ferry.conf"
        try DAVServer.password.write(toFile: directory.url.path + "/dav-password", atomically: true, encoding: .utf8)
        chmod(directory.url.path + "/dav-password", 0o600)
        try ([
            "[ferry]", "database = \(directory.url.path)/ferry.db", "", "[store personal]", "kind = dav-account", "url = \(url)",
            "username = \(DAVServer.username)", "password = file:\(directory.url.path)/dav-password",
        ] + keys).joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// ferryd with a `dav-account` store (Radicale): the account's pass finds the collections,
    /// each is scheduled and synced as a store of its own, one created on the server later is
    /// synced after a reload's resync, and `ferry status` lists them all.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: binary("ferryd")) && DAVServer.shouldRun, "build ferryd first and install radicale"))
    func syncsEveryCollectionOfAnAccount() throws {
        let dav = try DAVServer(.radicale, cards: 4, events: 2)
        defer { dav.stop() }
        let configPath = try accountConfiguration(url: dav.baseURL + "/", keys: ["interval = 1h"])
        let runtime = directory.url.path + "/run"
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

    /// A quiet account under ferryd costs its discovery's requests per interval: each
    /// discovery lists the collections' sync-tokens and brings their passes at once, and a
    /// collection whose token is the stored one asks nothing. Counted on the wire by a proxy
    /// in front of Radicale, against the requests `ferry discover` makes for the same account.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: binary("ferryd")) && DAVServer.shouldRun, "build ferryd first and install radicale"))
    func aQuietAccountCostsDiscoveryPerInterval() throws {
        let dav = try DAVServer(.radicale, cards: 3, events: 2)
        defer { dav.stop() }
        for index in 1...6 {
            try DAVAccountServerTests.makeAddressBook(dav, "/ferry/book-\(index)/", name: "Book \(index)")
            try dav.put("/ferry/book-\(index)/c.vcf", DAVServer.vCard(uid: "c\(index)", name: "Card \(index)", email: "c\(index)@example.com"))
        }
        let proxy = try TestServer.python("lossy_proxy.py", arguments: ["--upstream", dav.baseURL])
        defer { proxy.stop() }
        func forwarded() throws -> Int {
            let stats = try JSONSerialization.jsonObject(with: proxy.control("/__proxy/stats")) as? [String: Any]
            return try #require(stats?["forwarded"] as? Int)
        }
        let interval = 2
        let configPath = try accountConfiguration(url: proxy.baseURL + "/", keys: ["interval = \(interval)s", "jitter = 0s"])
        let runtime = directory.url.path + "/run"
        let daemon = try launch(Self.binary("ferryd"), ["--config", configPath], runtime: runtime)
        defer { if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) } }
        try waitFor("every collection synced") { (try? rows("personal")) == 3 + 2 + 6 }
        // Two intervals for the first passes' tokens to be stored.
        Thread.sleep(forTimeInterval: Double(2 * interval))

        let beforeDiscover = try forwarded()
        _ = try Shell.run(Self.binary("ferry"), ["discover", "--config", configPath])
        let discovery = try forwarded() - beforeDiscover
        // ferryd asked meanwhile too: the window's requests are bounded, not exact.
        let window = 5 * interval
        let start = try forwarded()
        Thread.sleep(forTimeInterval: Double(window))
        let asked = try forwarded() - start
        let intervals = window / interval
        print("quiet account under ferryd: \(asked) requests in \(window) s (interval \(interval) s, 8 collections); discovery costs \(discovery)")
        #expect(discovery > 0)
        #expect(asked >= discovery, "ferryd ran its discovery in the window")
        // Each collection asking once per interval would add 8 per interval.
        #expect(asked <= (intervals + 1) * discovery, "\(asked) requests in \(intervals) intervals; discovery is \(discovery)")
        kill(daemon.processIdentifier, SIGTERM)
        try waitFor("exit", timeout: 5) { !daemon.isRunning }
    }
}
