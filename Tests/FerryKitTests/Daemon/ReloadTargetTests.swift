@testable import FerryKit
import Foundation
import Testing

/// `ferry reload` signals only a process it verified is ferryd: a pid file a stopped ferryd
/// left behind, naming a pid another process has now, is removed and that process is left
/// alone; PID 1 is never signalled; the daemon's own pid file is found and used.
@Suite struct ReloadTargetTests {
    private func startSleep() throws -> Process {
        let sleep = Process()
        sleep.executableURL = URL(fileURLWithPath: "/bin/sleep")
        sleep.arguments = ["30"]
        try sleep.run()
        return sleep
    }

    /// The defect: ferryd stopped outside systemd and left `ferryd.pid`; its pid went to a
    /// `sleep`, which `ferry reload` then killed with SIGHUP.
    @Test func aStalePIDFileIsRemovedAndItsProcessLeftAlone() throws {
        try ReloadAcknowledgementTests.withDirectory { directory in
            let sleep = try startSleep()
            defer { sleep.terminate(); sleep.waitUntilExit() }
            try ReloadAcknowledgement.writePIDFile(directory: directory, pid: sleep.processIdentifier)
            #expect {
                try ReloadTarget.resolve(explicit: nil, environment: [:], directory: directory)
            } throws: { error in
                guard case .stalePIDFile(_, let pid, _)? = error as? ReloadError else { return false }
                return pid == sleep.processIdentifier
            }
            #expect(!FileManager.default.fileExists(atPath: ReloadAcknowledgement.pidFilePath(directory)))
            #expect(sleep.isRunning)
        }
    }

    /// A pid given with `--pid` (or `$MAINPID`) that is not ferryd is refused, and the file is
    /// no business of that check.
    @Test func anExplicitPIDThatIsNotFerrydIsRefused() throws {
        try ReloadAcknowledgementTests.withDirectory { directory in
            let sleep = try startSleep()
            defer { sleep.terminate(); sleep.waitUntilExit() }
            for (explicit, environment) in [(sleep.processIdentifier, [String: String]()), (nil, ["MAINPID": "\(sleep.processIdentifier)"])] {
                #expect {
                    try ReloadTarget.resolve(explicit: explicit, environment: environment, directory: directory)
                } throws: { error in
                    guard case .notFerryd(let pid, _)? = error as? ReloadError else { return false }
                    return pid == sleep.processIdentifier
                }
            }
            #expect(sleep.isRunning)
            #expect {
                try ReloadTarget.resolve(explicit: 1, environment: [:], directory: directory)
            } throws: { error in
                guard case .notFerryd(pid: 1, _)? = error as? ReloadError else { return false }
                return true
            }
        }
    }

    /// Where `/proc` hides the process (the shipped unit's ProcSubset=pid), `$MAINPID` and
    /// `INVOCATION_ID` are only environment variables any shell can set: the pid is taken only
    /// when ferryd's own pid file and reload state in its runtime directory name it too.
    @Test func aHiddenPIDNamedOnlyByTheEnvironmentIsNotSignalled() throws {
        try ReloadAcknowledgementTests.withDirectory { directory in
            let sleep = try startSleep()
            defer { sleep.terminate(); sleep.waitUntilExit() }
            let hidden = (directory as NSString).appendingPathComponent("empty-proc")
            try FileManager.default.createDirectory(atPath: hidden, withIntermediateDirectories: true)
            let pid = sleep.processIdentifier
            let unit = ["MAINPID": "\(pid)", "INVOCATION_ID": "0123456789abcdef"]
            func resolve(_ environment: [String: String]) throws(ReloadError) -> Int32 {
                try ReloadTarget.resolve(explicit: nil, environment: environment, directory: directory, proc: hidden)
            }
            #expect(throws: ReloadError.unverifiable(pid: pid)) { try resolve(unit) }
            // The pid file alone, or a reload state of another pid, is not enough.
            try ReloadAcknowledgement.writePIDFile(directory: directory, pid: pid)
            #expect(throws: ReloadError.unverifiable(pid: pid)) { try resolve(unit) }
            try ReloadAcknowledgement.publish(generation: 0, result: .ok, message: "started", directory: directory, pid: pid + 1)
            #expect(throws: ReloadError.unverifiable(pid: pid)) { try resolve(unit) }
            try ReloadAcknowledgement.publish(generation: 0, result: .ok, message: "started", directory: directory, pid: pid)
            #expect(try resolve(unit) == pid)
            // Outside a unit the same files do not stand in for a look at the process.
            #expect(throws: ReloadError.unverifiable(pid: pid)) { try resolve(["MAINPID": "\(pid)"]) }
            #expect(sleep.isRunning)
        }
    }

    /// A running ferryd found by its pid file is the target, and a reload reaches it.
    @Test func theDaemonsOwnPIDFileLeadsToIt() throws {
        try ReloadAcknowledgementTests.withDirectory { directory in
            let daemon = try ReloadAcknowledgementTests.startDaemon(directory: directory)
            defer { daemon.terminate(); daemon.waitUntilExit() }
            try ReloadAcknowledgement.writePIDFile(directory: directory, pid: daemon.processIdentifier)
            let pid = try ReloadTarget.resolve(explicit: nil, environment: [:], directory: directory)
            #expect(pid == daemon.processIdentifier)
            #expect(try ReloadAcknowledgement.requestReload(pid: pid, directory: directory, timeout: .seconds(20)).succeeded)
        }
    }

    /// The decision alone: gone, hidden, another program, a reused pid, ferryd.
    @Test func theVerdictReadsLikeASpec() {
        let ferryd = ProcessFacts(name: "ferryd", startTicks: 500)
        #expect(ReloadTarget.verdict(pid: 1, identity: ProcessFacts(name: "ferryd", startTicks: 1), recordedStart: nil, exists: true)
            == .notFerryd(pid: 1, reason: "pid 1 is the init process"))
        #expect(ReloadTarget.verdict(pid: 42, identity: nil, recordedStart: nil, exists: false) == .daemonExited(pid: 42))
        #expect(ReloadTarget.verdict(pid: 42, identity: nil, recordedStart: nil, exists: true) == .unverifiable(pid: 42))
        // The shipped unit hides ferryd's /proc entry from its own ExecReload=: systemd's
        // $MAINPID is taken there, and nowhere else without a look.
        #expect(ReloadTarget.verdict(pid: 42, identity: nil, recordedStart: nil, exists: true, namedBySystemd: true) == nil)
        #expect(ReloadTarget.verdict(pid: 1, identity: nil, recordedStart: nil, exists: true, namedBySystemd: true) != nil)
        #expect(ReloadTarget.verdict(pid: 42, identity: nil, recordedStart: nil, exists: false, namedBySystemd: true) == .daemonExited(pid: 42))
        #expect(ReloadTarget.verdict(pid: 42, identity: ProcessFacts(name: "sleep", startTicks: 1), recordedStart: nil, exists: true,
                                     namedBySystemd: true) != nil)
        #expect(ReloadTarget.verdict(pid: 42, identity: ProcessFacts(name: "sleep", startTicks: 500), recordedStart: nil, exists: true)
            == .notFerryd(pid: 42, reason: "it is sleep, not ferryd"))
        guard case .notFerryd? = ReloadTarget.verdict(pid: 42, identity: ferryd, recordedStart: 400, exists: true) else {
            Issue.record("a reused pid was taken for ferryd")
            return
        }
        #expect(ReloadTarget.verdict(pid: 42, identity: ferryd, recordedStart: 500, exists: true) == nil)
        #expect(ReloadTarget.verdict(pid: 42, identity: ferryd, recordedStart: nil, exists: true) == nil)
    }

    /// `/proc/PID/stat` with a command name that holds spaces and parentheses.
    @Test func statLinesAreParsedAroundTheName() {
        let line = "4242 (we (ird) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 200"
        #expect(ProcessFacts.parse(stat: line) == ProcessFacts(name: "we (ird) name", startTicks: 987_654))
        #expect(ProcessFacts.current?.startTicks ?? 0 > 0)
    }
}
