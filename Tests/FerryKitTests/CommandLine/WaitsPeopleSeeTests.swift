import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// `ferry sync` run by a person, its output piped as a script or a terminal-less session
/// would read it: a wait is said when it begins (a rate limit the server asked for, another
/// process syncing the store), not only under `--verbose`.
@Suite("Waits people see", .serialized)
struct WaitsPeopleSeeTests {
    static let ferry = FerrydProcessTests.binary("ferry")

    /// Starts `ferry sync` with standard error piped; its lines arrive in `lines`.
    private final class Run: @unchecked Sendable {
        let process = Process()
        private let lock = NSLock()
        private var text = ""

        init(_ arguments: [String]) throws {
            process.executableURL = URL(fileURLWithPath: WaitsPeopleSeeTests.ferry)
            process.arguments = arguments
            let errors = Pipe()
            process.standardError = errors
            process.standardOutput = FileHandle.nullDevice
            errors.fileHandleForReading.readabilityHandler = { [weak self] handle in
                let data = handle.availableData
                guard let self, !data.isEmpty else { return }
                self.lock.withLock { self.text += String(decoding: data, as: UTF8.self) }
            }
            try process.run()
        }

        var errors: String { lock.withLock { text } }

        /// Waits up to `seconds` for standard error to contain `words`.
        func waitFor(_ words: String, seconds: Double) -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                if errors.contains(words) { return true }
                usleep(20_000)
            }
            return errors.contains(words)
        }
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: ferry), "build ferry first: swift build"))
    func aRateLimitWaitIsSaid() throws {
        let server = try ParseTestServer.start()
        try server.admin("seed", ["class": "Quote", "count": 5, "seed": 7])
        try server.admin("fault", ["next": 1, "status": 429, "retry_after": 1])
        let directory = try TemporaryDirectory()
        let run = try Run(["sync", "--config", try RateLimitWaitTests.configuration(server, in: directory)])
        run.process.waitUntilExit()
        #expect(run.process.terminationStatus == 0, "\(run.errors)")
        // A short wait is taken within the pass: the read is asked again, and said.
        #expect(run.errors.contains("store quotes: rate limited (HTTP 429)") && run.errors.contains("asking again in 1s"), "\(run.errors)")
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: ferry), "build ferry first: swift build"))
    func anotherProcessSyncingTheStoreIsSaid_andWaitedFor() throws {
        let server = try ParseTestServer.start()
        try server.admin("seed", ["class": "Quote", "count": 5, "seed": 7])
        let directory = try TemporaryDirectory()
        let configuration = try RateLimitWaitTests.configuration(server, in: directory)
        let first = try Run(["sync", "--config", configuration])
        first.process.waitUntilExit()
        try #require(first.process.terminationStatus == 0, "\(first.errors)")

        // This test process holds the store's pass, as another `ferry sync` would.
        let database = try SharedDatabase(path: directory.path("replica.db"))
        defer { database.close() }
        #expect(try database.write { try $0.claimPass(of: "quotes", token: "holder", at: Date()) } == nil)
        let second = try Run(["sync", "--config", configuration])
        #expect(second.waitFor("is syncing it; waiting up to 1m", seconds: 20), "\(second.errors)")
        #expect(second.errors.contains("(pid \(getpid()))"), "names the holder: \(second.errors)")
        #expect(second.process.isRunning, "waits while another holds the store")
        database.write { $0.releasePass(of: "quotes", token: "holder") }
        second.process.waitUntilExit()
        #expect(second.process.terminationStatus == 0, "\(second.errors)")
    }
}
