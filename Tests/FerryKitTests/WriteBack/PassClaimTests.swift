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

    /// A replica that turned read-only (or full) under a pass: the claim's row cannot be
    /// removed, and holds nothing once the pass let go of its lock, so the same process's next
    /// pass claims the store instead of calling itself busy for as long as the process runs
    /// (ferryd, found by the daemon suite's read-only remount), and so would anyone's.
    @Test func aClaimWhoseRowCouldNotBeRemovedHoldsNothing() throws {
        let (directory, database) = try Self.replica()
        defer { database.close(); _ = directory }
        #expect(try database.write { try $0.claimPass(of: "items", token: "first", at: Date()) } == nil)
        try database.write { database in
            try database.connection.execute("PRAGMA query_only = 1")
            database.releasePass(of: "items", token: "first")
            try database.connection.execute("PRAGMA query_only = 0")
        }
        #expect(try database.write { try $0.connection.scalarInt("SELECT count(*) FROM ferry_pass_claims") } == 1, "the row stays")
        #expect(try database.write { try $0.passClaimHolder(of: "items") } == nil, "and holds nothing")
        let other = try SharedDatabase(path: directory.path("replica.db"))
        defer { other.close() }
        #expect(try other.write { try $0.passClaimHolder(of: "items") } == nil, "for another connection either")
        #expect(try database.write { try $0.claimPass(of: "items", token: "second", at: Date()) } == nil, "ours, not busy")
        // Another pass's claim still makes a pass busy.
        #expect(try database.write { try $0.claimPass(of: "items", token: "third", at: Date()) } != nil)
        #expect(try other.write { try $0.claimPass(of: "items", token: "fourth", at: Date()) }?.pid == getpid())
    }

    /// A row is only words: with nobody holding the store's lock, a row naming a process that
    /// ended, or one that runs (this one, as a Ferry 0.3 binary would have checked it), holds
    /// nothing.
    @Test func aRowWithoutItsLockHoldsNothing() throws {
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
        database.write { $0.releasePass(of: "items", token: "new") }
        try database.write { try $0.connection.execute("""
            INSERT INTO ferry_pass_claims(store_id, pid, process_start, token, command, claimed)
            SELECT store_id, \(getpid()), '\(ProcessIdentity.start)', 'old', 'ferryd', 0 FROM ferry_stores WHERE name = 'items'
            """) }
        #expect(try database.write { try $0.claimPass(of: "items", token: "new", at: Date()) } == nil)
    }

    /// Each connection is an open file of its own, as each process is: one connection holds
    /// the claims of several stores at once (a byte each), another sees each of them held
    /// until let go of, and all of them free once the first connection is gone, its rows
    /// left behind.
    @Test func claimsOfSeveralStoresAreHeldApart_andGoWithTheirFile() throws {
        let (directory, first) = try Self.replica()
        defer { _ = directory }
        try first.write { try $0.prepare(StoreDefinition(try configuredStore(name: "others", kind: "json", url: "http://127.0.0.1:9/others"))) }
        let second = try SharedDatabase(path: directory.path("replica.db"))
        defer { second.close() }
        #expect(try first.write { try $0.claimPass(of: "items", token: "a", at: Date()) } == nil)
        #expect(try first.write { try $0.claimPass(of: "others", token: "b", at: Date()) } == nil)
        let holder = try #require(try second.write { try $0.claimPass(of: "items", token: "c", at: Date()) })
        #expect(holder.pid == getpid() && holder.command == ProcessIdentity.command && holder.since != nil, "\(holder)")
        #expect(try second.write { try $0.claimPass(of: "others", token: "c", at: Date()) } != nil)
        first.write { $0.releasePass(of: "items", token: "a") }
        #expect(try second.write { try $0.claimPass(of: "items", token: "c", at: Date()) } == nil)
        #expect(try second.write { try $0.claimPass(of: "others", token: "d", at: Date()) } != nil, "still held")
        first.close()
        #expect(try second.write { try $0.passClaimHolder(of: "others") } == nil, "its file closed, the claim is gone")
        #expect(try second.write { try $0.claimPass(of: "others", token: "d", at: Date()) } == nil)
    }

    /// Root's `ferry sync` making the lock file of the service's replica: the file gets the
    /// replica's owner, group and mode, so ferryd (its owner) can lock it.
    @Test(.enabled(if: geteuid() == 0, "needs root to give a file away"))
    func theLockFileTakesTheReplicasOwnerAndMode() throws {
        let (directory, database) = try Self.replica()
        defer { database.close(); _ = directory }
        let replica = directory.path("replica.db")
        let nobody = try #require(getpwnam("nobody")?.pointee)
        #expect(chown(replica, nobody.pw_uid, nobody.pw_gid) == 0)
        #expect(chmod(replica, 0o640) == 0)
        #expect(try database.write { try $0.claimPass(of: "items", token: "a", at: Date()) } == nil)
        var info = stat()
        #expect(stat(PassLockFile.path(beside: replica), &info) == 0)
        #expect((info.st_uid, info.st_gid, info.st_mode & 0o7777) == (nobody.pw_uid, nobody.pw_gid, 0o640))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.url.path).filter { $0.contains(".tmp.") }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }

    /// Someone removed the lock file while nobody held a claim: a connection that had it open
    /// locks the file the path names now, the one other processes lock.
    @Test func aRemovedLockFileIsMadeAgainAndShared() throws {
        let (directory, first) = try Self.replica()
        defer { first.close(); _ = directory }
        #expect(try first.write { try $0.claimPass(of: "items", token: "a", at: Date()) } == nil)
        first.write { $0.releasePass(of: "items", token: "a") }
        #expect(unlink(PassLockFile.path(beside: directory.path("replica.db"))) == 0)
        let second = try SharedDatabase(path: directory.path("replica.db"))
        defer { second.close() }
        #expect(try second.write { try $0.claimPass(of: "items", token: "b", at: Date()) } == nil)
        #expect(try first.write { try $0.claimPass(of: "items", token: "a", at: Date()) } != nil, "held by the other connection")
    }

    /// Another process's claim, held by the real `ferry sync` (stalled on its first page): seen
    /// as held whatever its row says of the process (a sandboxed ferryd, which cannot read the
    /// boot id, writes `no-boot-id:START`, which Ferry 0.3 took for a dead process's and wrote
    /// over), and free the moment that process is killed.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: WaitsPeopleSeeTests.ferry), "build ferry first: swift build"))
    func anotherProcessesClaimHoldsWhateverItsRowSays_andEndsWithIt() throws {
        let server = try ParseTestServer.start()
        try server.admin("seed", ["class": "Quote", "count": 5, "seed": 7])
        _ = try server.admin("fault", ["next": 1, "kind": "stall", "seconds": 60])
        let directory = try TemporaryDirectory()
        let configuration = try RateLimitWaitTests.configuration(server, in: directory)
        let child = Process()
        child.executableURL = URL(fileURLWithPath: WaitsPeopleSeeTests.ferry)
        child.arguments = ["sync", "--config", configuration]
        child.standardOutput = FileHandle.nullDevice
        child.standardError = FileHandle.nullDevice
        try child.run()
        defer { if child.isRunning { kill(child.processIdentifier, SIGKILL); child.waitUntilExit() } }

        var database: SharedDatabase?
        var holder: ReplicaDatabase.PassClaimHolder?
        let deadline = Date().addingTimeInterval(30)
        while holder == nil, Date() < deadline {
            // The child makes the replica; open it once it is there.
            if database == nil, FileManager.default.fileExists(atPath: directory.path("replica.db-passes")) {
                database = try SharedDatabase(path: directory.path("replica.db"))
            }
            holder = try database?.write { try $0.passClaimHolder(of: "quotes") }
            if holder == nil { usleep(50_000) }
        }
        let replica = try #require(database, "ferry sync made no lock file")
        defer { replica.close() }
        #expect(holder?.pid == child.processIdentifier && holder?.command == "ferry sync", "\(String(describing: holder))")
        try replica.write { try $0.connection.execute("UPDATE ferry_pass_claims SET process_start = 'no-boot-id:1'") }
        #expect(try replica.write { try $0.claimPass(of: "quotes", token: "here", at: Date()) }?.pid == child.processIdentifier,
                "a row this process cannot check still holds")
        try replica.write { try $0.connection.execute("UPDATE ferry_pass_claims SET pid = 1") }
        #expect(try replica.write { try $0.claimPass(of: "quotes", token: "here", at: Date()) } != nil, "whatever pid it names")

        kill(child.processIdentifier, SIGKILL)
        child.waitUntilExit()
        #expect(try replica.write { try $0.claimPass(of: "quotes", token: "here", at: Date()) } == nil, "killed, it holds nothing")
        #expect(try replica.write { try $0.passClaimHolder(of: "quotes") }?.pid == getpid())
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
        let started = ContinuousClock.now
        queue.addOperation(waiting)
        Thread.sleep(forTimeInterval: 1)
        #expect(!waiting.isFinished, "waits while another holds the store")
        // One check per interval, the thread asleep in between (a timer that fired at once made
        // it about 900 a second): at most one more than the intervals gone, and the first.
        let intervals = Int(((ContinuousClock.now - started) / .seconds(SyncPassOperation.claimRetry)).rounded(.down))
        #expect(waiting.claimCheckCount <= intervals + 2, "\(waiting.claimCheckCount) checks in \(intervals) intervals")
        database.write { $0.releasePass(of: "items", token: "someone") }
        queue.waitUntilAllOperationsAreFinished()
        while !waiting.isFinished { usleep(1000) }
        if case .failure(let error)? = waiting.result {
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
