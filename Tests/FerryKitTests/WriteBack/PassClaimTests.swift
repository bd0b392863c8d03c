import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// One pass of a store at a time, across processes: a second pass of a store another pass
/// holds waits for it (a one-shot command) or does nothing and says who holds it (ferryd);
/// a claim whose process died holds nothing. Two pushes at once never create a record twice
/// nor lose a row.
@Suite("One pass of a store at a time", .serialized)
struct PassClaimTests {
    static func replica() throws -> (TemporaryDirectory, SharedDatabase) {
        let directory = try TemporaryDirectory()
        let database = try SharedDatabase(path: directory.path("replica.db"))
        let store = try configuredStore(name: "items", kind: "json", url: "http://127.0.0.1:9/items")
        try database.write { try $0.prepare(StoreDefinition(store)) }
        return (directory, database)
    }

    @Test func aClaimIsHeldUntilReleased_andTheSameTokenClaimsAgain() throws {
        let (directory, database) = try Self.replica()
        defer { database.close(); _ = directory }
        #expect(try database.write { try $0.claimPass(of: "items", token: "a", at: Date()) } == nil)
        #expect(try database.write { try $0.claimPass(of: "items", token: "a", at: Date()) } == nil, "ours already")
        let holder = try #require(try database.write { try $0.claimPass(of: "items", token: "b", at: Date()) })
        #expect(holder.pid == getpid())
        #expect(try database.write { try $0.passClaimHolder(of: "items") }?.pid == getpid())
        database.write { $0.releasePass(of: "items", token: "b") }
        #expect(try database.write { try $0.claimPass(of: "items", token: "b", at: Date()) } != nil, "b's release frees nothing of a's")
        database.write { $0.releasePass(of: "items", token: "a") }
        #expect(try database.write { try $0.passClaimHolder(of: "items") } == nil)
        #expect(try database.write { try $0.claimPass(of: "items", token: "b", at: Date()) } == nil)
    }

    /// A process killed while it held the store (SIGKILL leaves its row) holds nothing.
    /// A replica that turned read-only (or full) under a pass: its claim cannot be let go of,
    /// and the same process's next pass takes it over instead of calling itself busy for as
    /// long as the process runs (ferryd, found by the daemon suite's read-only remount).
    @Test func aClaimThatCouldNotBeLetGoIsTakenOverByTheSameProcess() throws {
        let (_, database) = try Self.replica()
        defer { database.close() }
        #expect(try database.write { try $0.claimPass(of: "items", token: "first", at: Date()) } == nil)
        try database.write { database in
            try database.connection.execute("PRAGMA query_only = 1")
            database.releasePass(of: "items", token: "first")
            try database.connection.execute("PRAGMA query_only = 0")
        }
        #expect(try database.write { try $0.passClaimHolder(of: "items") } != nil, "the claim still stands")
        #expect(try database.write { try $0.claimPass(of: "items", token: "second", at: Date()) } == nil, "ours, not busy")
        // Another pass's live claim still makes a pass busy.
        #expect(try database.write { try $0.claimPass(of: "items", token: "third", at: Date()) } != nil)
    }

    @Test func aClaimOfAProcessThatEndedIsTakenOver() throws {
        let (directory, database) = try Self.replica()
        defer { database.close(); _ = directory }
        let ended = Process()
        ended.executableURL = URL(fileURLWithPath: "/bin/true")
        try ended.run()
        ended.waitUntilExit()
        try database.write { database in
            try database.connection.execute("""
                INSERT INTO ferry_pass_claims(store_id, pid, process_start, token, command, claimed)
                SELECT store_id, \(ended.processIdentifier), 'gone:1', 'dead', 'ferry push', 0 FROM ferry_stores WHERE name = 'items'
                """)
        }
        #expect(try database.write { try $0.passClaimHolder(of: "items") } == nil)
        #expect(try database.write { try $0.claimPass(of: "items", token: "new", at: Date()) } == nil)
        // A pid that runs now but started later is another process.
        try database.write { try $0.connection.execute("UPDATE ferry_pass_claims SET pid = \(getpid()), process_start = 'other-boot:1', token = 'old'") }
        #expect(try database.write { try $0.claimPass(of: "items", token: "new", at: Date()) } == nil)
    }

    /// A pass of a store another pass holds: ferryd's (no wait) ends `.busy` having done
    /// nothing, and records no failure; a one-shot command's waits and then runs.
    @Test func aSecondPassIsBusyOrWaits() throws {
        let (directory, database) = try Self.replica()
        defer { database.close() }
        let store = try configuredStore(name: "items", kind: "json", url: "http://127.0.0.1:9/items")
        #expect(try database.write { try $0.claimPass(of: "items", token: "someone", at: Date()) } == nil)
        let busy = try ParsePushTests.run(store, database)
        guard case .failure(let error) = busy else { Issue.record("a held store's pass ran: \(busy)"); return }
        #expect(error.kind == .busy)
        #expect(error.description.contains("pid \(getpid())"), "says who holds it: \(error)")
        #expect(FerryExitCode.for(error) == .busy)
        #expect(try database.write { try $0.syncState(of: "items") }?.lastError == nil, "nothing recorded against the store")

        var setup = SyncPassOperation.Setup(store: store, database: database, trigger: .onDemand, reconcile: false, pass: 1,
                                            logger: .init(label: "ferry.test"))
        setup.claimWait = .seconds(10)
        let waiting = SyncPassOperation(setup)
        let queue = OperationQueue()
        queue.addOperation(waiting)
        Thread.sleep(forTimeInterval: 0.6)
        #expect(!waiting.isFinished, "waits while another holds the store")
        database.write { $0.releasePass(of: "items", token: "someone") }
        queue.waitUntilAllOperationsAreFinished()
        while !waiting.isFinished { usleep(1000) }
        if case .failure(let error as SyncError)? = waiting.result {
            #expect(error.kind != .busy, "ran once the store was free: \(error)")
        }
        _ = directory
    }

    /// `ferry push` twice at once on one replica, round after round: every local insert is one
    /// member on the server and one row here, whichever push sent it.
    @Test(.enabled(if: DAVServer.shouldRun && FileManager.default.isExecutableFile(atPath: PushCommandTests.ferry), "radicale or ferry missing"))
    func twoPushesAtOnceCreateEachRecordOnce() throws {
        let server = try DAVServer(.radicale, cards: 2, events: 0)
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let (configuration, database) = try PushCommandTests.configuration(for: server, in: directory)
        #expect(try PushCommandTests.run(["sync", "-c", configuration]).status == 0)
        let sqlite = try #require(TestTools.executable("sqlite3"))
        for round in 0..<5 {
            for card in 0..<3 {
                let body = DAVServer.vCard(uid: "r\(round)-c\(card)", name: "Round \(round) card \(card)", email: "r\(round)c\(card)@example.com")
                try Shell.run(sqlite, [database, "INSERT INTO contacts(body) VALUES (\(literal(body)))"])
            }
            let pushes = (0..<2).map { _ in
                let process = Process()
                process.executableURL = URL(fileURLWithPath: PushCommandTests.ferry)
                process.arguments = ["push", "-c", configuration]
                process.standardOutput = FileHandle.nullDevice
                process.standardError = FileHandle.nullDevice
                return process
            }
            for push in pushes { try push.run() }
            for push in pushes { push.waitUntilExit() }
            #expect(pushes.map(\.terminationStatus) == [0, 0], "round \(round): the second push waits for the first")
            let rows = try Shell.run(sqlite, [database, "SELECT id FROM contacts WHERE id LIKE 'r\(round)-%' OR id LIKE 'local-%' ORDER BY id"])
            #expect(String(decoding: rows, as: UTF8.self).split(separator: "\n") == ["r\(round)-c0.vcf", "r\(round)-c1.vcf", "r\(round)-c2.vcf"],
                    "round \(round): one row per card, none lost")
        }
        #expect(try PushCommandTests.run(["sync", "-c", configuration]).status == 0)
        let rows = try Shell.run(sqlite, [database, "SELECT count(*) FROM contacts"])
        #expect(String(decoding: rows, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) == "17")
    }
}
