import Foundation
import Logging
import Testing
@testable import FerryKit
import FerryTestSupport

/// `ferry sync` answered 429 with Retry-After waits as the server asks, within a budget, and
/// passes the store again (rclone's way); past the budget it fails saying when to retry.
@Suite("A one-shot sync and a rate limit", .serialized)
struct RateLimitWaitTests {
    /// A configuration of one Parse store `quotes` on `server`, its key in a 0600 file; its path.
    static func configuration(_ server: ParseTestServer, in directory: TemporaryDirectory) throws -> String {
        let key = directory.path("key")
        try "rest-secret".write(toFile: key, atomically: true, encoding: .utf8)
        chmod(key, 0o600)
        try """
            [ferry]
            database = \(directory.path("replica.db"))
            [store quotes]
            kind = parse
            url = \(server.mount)
            application-id = ferry-test
            class = Quote
            rest-api-key = file:\(key)
            """.write(toFile: directory.path("ferry.conf"), atomically: true, encoding: .utf8)
        return directory.path("ferry.conf")
    }

    static func sync(_ server: ParseTestServer, in directory: TemporaryDirectory, wait: Duration) throws -> Result<PassReport, SyncError> {
        let configuration = try ConfigurationLoader.load(path: try Self.configuration(server, in: directory), environment: [:])
        let sync = try OneShotSync(configuration: configuration, storeNames: [], databasePath: directory.path("replica.db"), logger: Logger(label: "test"))
        sync.rateLimitWait = wait
        return try #require(sync.run(refresh: .milliseconds(50)) { _ in }.first?.result)
    }

    @Test func aRateLimitWithinTheBudgetIsWaitedFor() throws {
        let server = try ParseTestServer.start()
        try server.admin("seed", ["class": "Quote", "count": 5, "seed": 7])
        try server.admin("fault", ["next": 1, "status": 429, "retry_after": 1])
        let directory = try TemporaryDirectory()
        let report = try Self.sync(server, in: directory, wait: .seconds(60)).get()
        #expect(report.counts.inserted == 5, "\(report.summary)")
    }

    @Test func aRateLimitPastTheBudgetFailsSayingWhenToRetry() throws {
        let server = try ParseTestServer.start()
        try server.admin("seed", ["class": "Quote", "count": 5, "seed": 7])
        try server.admin("fault", ["next": 1, "status": 429, "retry_after": 30])
        let directory = try TemporaryDirectory()
        guard case .failure(let error) = try Self.sync(server, in: directory, wait: .seconds(5)) else {
            Issue.record("the pass did not wait 30 s and still succeeded")
            return
        }
        #expect(error.kind == .rateLimited)
        #expect(error.description.contains("retry in 30s") || error.description.contains("retry in 30 s"), "\(error)")
        #expect(FerryExitCode.for(error) == .unavailable)
    }
}
