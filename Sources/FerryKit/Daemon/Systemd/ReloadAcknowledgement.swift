import Foundation

/// Makes `systemctl reload ferryd` synchronous on systemd 252, which has no Type=notify-reload.
///
/// With `ExecReload=/bin/kill -HUP $MAINPID`, systemd considers the reload done as soon as `kill`
/// exits, before the daemon re-read anything. Instead `ExecReload=ferry reload --pid $MAINPID`
/// signals and waits for an acknowledgement in `$RUNTIME_DIRECTORY`:
///
/// - ferryd writes `ferryd.pid` at start (``writePIDFile(directory:pid:)``) and publishes
///   generation 0 before `READY=1`;
/// - after every reload attempt, successful or not, it publishes the next generation with the
///   outcome (``publish(generation:result:message:directory:pid:)``), atomically (temporary
///   file + rename, so a reader never sees half a file);
/// - ``requestReload(pid:directory:timeout:)`` notes the current generation, sends SIGHUP and
///   waits for a higher generation written by the same pid.
///
/// The state file names the pid that wrote it, so a file left by a previous ferryd is never
/// taken as an answer from the current one.
public enum ReloadAcknowledgement {
    public static let pidFileName = "ferryd.pid"
    public static let stateFileName = "reload-state"

    /// The content of the state file.
    public struct State: Sendable, Equatable {
        public var pid: Int32
        public var result: ReloadResult
        /// When the writer started (``ProcessFacts/startTicks``): a pid reused since is
        /// told apart. Nil in a file that does not say.
        public var startTicks: UInt64?
    }

    // MARK: - Daemon side

    /// Writes `pid` (default: this process) to `directory/ferryd.pid`.
    public static func writePIDFile(directory: String, pid: Int32 = getpid()) throws(ReloadError) {
        try writeAtomically("\(pid)\n", to: path(directory, pidFileName))
    }

    /// Publishes the outcome of reload number `generation` (0: the configuration loaded at start).
    public static func publish(generation: Int, result: ReloadResult.Outcome, message: String, directory: String,
                               pid: Int32 = getpid()) throws(ReloadError) {
        // One line per field: a newline in the message would forge a field.
        let oneLine = message.split(whereSeparator: \.isNewline).joined(separator: " | ")
        // Only a process knows its own start time for sure.
        let start = pid == getpid() ? ProcessFacts.current.map { "start=\($0.startTicks)\n" } ?? "" : ""
        let text = "pid=\(pid)\ngeneration=\(generation)\nresult=\(result.rawValue)\nmessage=\(oneLine)\n" + start
        try writeAtomically(text, to: path(directory, stateFileName))
    }

    // MARK: - Reload command side

    /// The pid from `directory/ferryd.pid`.
    public static func readPIDFile(directory: String) throws(ReloadError) -> Int32 {
        let file = path(directory, pidFileName)
        guard let data = FileManager.default.contents(atPath: file) else { throw .noPIDFile(path: file) }
        guard let pid = Int32(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)),
              pid > 0 else {
            throw .invalidPIDFile(path: file)
        }
        return pid
    }

    /// The pid file's path in `directory`.
    public static func pidFilePath(_ directory: String) -> String {
        path(directory, pidFileName)
    }

    /// Removes the pid file a stopping ferryd wrote, if it is still this process's: a file left
    /// behind would name a pid the kernel gives to another process later.
    public static func removePIDFile(directory: String, pid: Int32 = getpid()) {
        guard (try? readPIDFile(directory: directory)) == pid else { return }
        unlink(path(directory, pidFileName))
    }

    /// The last published state, or nil when there is none (or it cannot be parsed).
    public static func readState(directory: String) -> State? {
        guard let data = FileManager.default.contents(atPath: path(directory, stateFileName)) else { return nil }
        var fields: [String: String] = [:]
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            fields[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        guard let pid = fields["pid"].flatMap(Int32.init),
              let generation = fields["generation"].flatMap(Int.init),
              let outcome = fields["result"].flatMap(ReloadResult.Outcome.init(rawValue:)) else {
            return nil
        }
        return State(pid: pid, result: ReloadResult(generation: generation, outcome: outcome, message: fields["message"] ?? ""),
                     startTicks: fields["start"].flatMap(UInt64.init))
    }

    /// Sends SIGHUP to `pid` and waits until it publishes a newer generation. `pid` is one
    /// ``ReloadTarget/resolve(explicit:environment:directory:expectedName:proc:)`` verified;
    /// PID 1 and lower are refused here too.
    ///
    /// Returns the daemon's answer, `.error` included (the caller exits 1 and prints the
    /// message); throws when there is no answer at all.
    public static func requestReload(pid: Int32, directory: String, timeout: Duration = .seconds(30)) throws(ReloadError) -> ReloadResult {
        guard pid > 1 else { throw .notFerryd(pid: pid, reason: pid == 1 ? "pid 1 is the init process" : "not a process id") }
        let before = readState(directory: directory)
        let baseline = before?.pid == pid ? before!.result.generation : -1
        try signal(pid, SIGHUP)
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while true {
            if let state = readState(directory: directory), state.pid == pid, state.result.generation > baseline {
                return state.result
            }
            guard clock.now < deadline else { throw .timedOut(pid: pid, after: timeout) }
            // Signal 0 probes existence: a daemon that crashed on reload never answers.
            try signal(pid, 0)
            usleep(20_000)
        }
    }

    // MARK: - System calls (the one place their errno values become ReloadError)

    private static func signal(_ pid: Int32, _ number: Int32) throws(ReloadError) {
        precondition(pid > 0, "refusing to signal a process group or every process (pid \(pid))")
        guard kill(pid, number) == 0 else {
            let code = errno
            if code == ESRCH { throw .daemonExited(pid: pid) }
            throw .signalFailed(pid: pid, errno: code)
        }
    }

    private static func path(_ directory: String, _ name: String) -> String {
        (directory as NSString).appendingPathComponent(name)
    }

    /// Readers see the old or the new content, never a partial one.
    static func writeAtomically(_ text: String, to file: String) throws(ReloadError) {
        do {
            try AtomicFile.write(Data(text.utf8), to: file)
        } catch {
            throw .fileOperationFailed(operation: error.operation, path: error.path, errno: error.errno)
        }
    }
}
