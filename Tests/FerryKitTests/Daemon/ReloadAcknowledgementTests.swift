import FerryKit
import FerryTestSupport
import Foundation
import Testing

/// The synchronous reload protocol against real child processes that play ferryd.
@Suite struct ReloadAcknowledgementTests {
    static func withDirectory<T>(_ body: (String) throws -> T) throws -> T {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-reload-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        return try body(directory)
    }

    /// A /bin/sh stand-in for ferryd: publishes generation 0, then on every SIGHUP the next
    /// generation with `result` (the same file format, written by temp file + rename). It runs
    /// through a link named ferryd, so the kernel names it ferryd as it does the daemon.
    static func startDaemon(directory: String, result: String = "ok", onHUP: String? = nil) throws -> Process {
        let script = """
            dir="$1"; gen=0
            publish() {
              printf 'pid=%s\\ngeneration=%s\\nresult=%s\\nmessage=%s\\n' $$ "$gen" "$1" "$2" > "$dir/.state.$$"
              mv "$dir/.state.$$" "$dir/reload-state"
            }
            \(onHUP ?? "trap 'gen=$((gen+1)); publish \(result) \"reload $gen done\"' HUP")
            publish ok started
            while :; do sleep 0.02; done
            """
        let process = Process()
        let link = (directory as NSString).appendingPathComponent(ReloadTarget.daemonName)
        if !FileManager.default.fileExists(atPath: link) { try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "/bin/sh") }
        process.executableURL = URL(fileURLWithPath: link)
        process.arguments = ["-c", script, "fake-ferryd", directory]
        try process.run()
        // Wait for generation 0 from this very process.
        let deadline = Date().addingTimeInterval(10)
        while ReloadAcknowledgement.readState(directory: directory)?.pid != process.processIdentifier {
            guard Date() < deadline else {
                process.terminate()
                throw ReloadTestError.daemonDidNotStart
            }
            usleep(10_000)
        }
        return process
    }

    @Test func requestReload_returnsOnlyAfterTheDaemonAcknowledged() throws {
        try Self.withDirectory { directory in
            let daemon = try Self.startDaemon(directory: directory)
            defer { daemon.terminate(); daemon.waitUntilExit() }
            let pid = daemon.processIdentifier
            let first = try ReloadAcknowledgement.requestReload(pid: pid, directory: directory, timeout: .seconds(20))
            #expect(first == ReloadResult(generation: 1, outcome: .ok, message: "reload 1 done"))
            // When requestReload returned, the file already holds the acknowledged generation.
            #expect(ReloadAcknowledgement.readState(directory: directory)?.result.generation == 1)
            let second = try ReloadAcknowledgement.requestReload(pid: pid, directory: directory, timeout: .seconds(20))
            #expect(second.generation == 2)
            #expect(second.succeeded)
        }
    }

    @Test func refusedConfiguration_isAnAnswerNotAnError() throws {
        try Self.withDirectory { directory in
            let daemon = try Self.startDaemon(directory: directory, result: "error")
            defer { daemon.terminate(); daemon.waitUntilExit() }
            let result = try ReloadAcknowledgement.requestReload(pid: daemon.processIdentifier, directory: directory, timeout: .seconds(20))
            #expect(result.outcome == .error)
            #expect(!result.succeeded)
            #expect(result.message == "reload 1 done")
        }
    }

    @Test func daemonThatNeverAnswers_timesOut() throws {
        try Self.withDirectory { directory in
            let daemon = try Self.startDaemon(directory: directory, onHUP: "trap '' HUP")
            defer { daemon.terminate(); daemon.waitUntilExit() }
            let pid = daemon.processIdentifier
            #expect(throws: ReloadError.timedOut(pid: pid, after: .milliseconds(300))) {
                try ReloadAcknowledgement.requestReload(pid: pid, directory: directory, timeout: .milliseconds(300))
            }
        }
    }

    @Test func daemonThatDiesOnReload_isReportedAsExited() throws {
        try Self.withDirectory { directory in
            let daemon = try Self.startDaemon(directory: directory, onHUP: "trap 'exit 3' HUP")
            let pid = daemon.processIdentifier
            #expect(throws: ReloadError.daemonExited(pid: pid)) {
                try ReloadAcknowledgement.requestReload(pid: pid, directory: directory, timeout: .seconds(20))
            }
            daemon.waitUntilExit()
        }
    }

    @Test func staleStateOfAnotherPid_isNotTakenAsTheAnswer() throws {
        try Self.withDirectory { directory in
            let daemon = try Self.startDaemon(directory: directory, onHUP: "trap '' HUP")
            defer { daemon.terminate(); daemon.waitUntilExit() }
            // A file from a previous ferryd with a huge generation must not count.
            try ReloadAcknowledgement.publish(generation: 99, result: .ok, message: "old", directory: directory, pid: 1)
            #expect(throws: ReloadError.timedOut(pid: daemon.processIdentifier, after: .milliseconds(300))) {
                try ReloadAcknowledgement.requestReload(pid: daemon.processIdentifier, directory: directory, timeout: .milliseconds(300))
            }
        }
    }

    @Test func publishAndPIDFile_roundTrip() throws {
        try Self.withDirectory { directory in
            try ReloadAcknowledgement.publish(generation: 3, result: .error, message: "a.conf:2: bad\na.conf:5: worse",
                                              directory: directory, pid: 1234)
            let state = try #require(ReloadAcknowledgement.readState(directory: directory))
            #expect(state.pid == 1234)
            #expect(state.result == ReloadResult(generation: 3, outcome: .error, message: "a.conf:2: bad | a.conf:5: worse"))
            // No temporary file is left beside it.
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["reload-state"])

            #expect(throws: ReloadError.noPIDFile(path: directory + "/ferryd.pid")) {
                try ReloadAcknowledgement.readPIDFile(directory: directory)
            }
            try ReloadAcknowledgement.writePIDFile(directory: directory)
            #expect(try ReloadAcknowledgement.readPIDFile(directory: directory) == getpid())
        }
    }

    @Test func missingDirectory_isATypedError() {
        #expect(throws: ReloadError.self) {
            try ReloadAcknowledgement.publish(generation: 1, result: .ok, message: "", directory: "/nonexistent/ferry")
        }
    }

    /// PID 1, and pids that name process groups, are never signalled, whatever asks.
    @Test func pidOneIsNeverSignalled() {
        for pid: Int32 in [1, 0, -1] {
            #expect(throws: ReloadError.self) {
                try ReloadAcknowledgement.requestReload(pid: pid, directory: "/nonexistent/ferry", timeout: .seconds(30))
            }
        }
    }
}

enum ReloadTestError: Error {
    case daemonDidNotStart
}
