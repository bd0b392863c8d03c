import Foundation

/// Which process `ferry reload` may signal: one it has verified is ferryd, never PID 1 and
/// never whatever process now holds the pid of a ferryd that stopped.
///
/// A pid comes from `--pid`, from `$MAINPID` (systemd's `ExecReload=`) or from the pid file a
/// ferryd writes at start (its reload state records its start time, so a pid the kernel handed
/// to another process since is told apart). Where `/proc` hides the process (the shipped
/// unit's sandbox), `$MAINPID` is taken only inside a unit and only when ferryd's own pid file
/// and reload state name the same pid. The decision is ``verdict(pid:identity:recordedStart:exists:)``, a pure
/// function of what `/proc` shows; ``resolve(explicit:environment:directory:)`` reads the facts
/// and removes a pid file that names no running ferryd.
public enum ReloadTarget {
    /// The command name ferryd runs under.
    public static let daemonName = "ferryd"

    /// Where a pid came from.
    public enum Source: Sendable, Equatable {
        case option
        case mainPID
        case pidFile(path: String)
    }

    /// Whether `pid` may be signalled, from what `/proc` shows of it (`identity`, nil when it
    /// shows nothing), the start time a pid file recorded, whether the process exists at all
    /// (`kill(pid, 0)` succeeded or failed with EPERM), and whether systemd itself named it
    /// (`namedBySystemd`: `$MAINPID` in a unit's `ExecReload=`).
    public static func verdict(pid: Int32, identity: ProcessFacts?, recordedStart: UInt64?, exists: Bool,
                               namedBySystemd: Bool = false, expectedName: String = daemonName) -> ReloadError? {
        // PID 1 is the init system (or a container's only process, which ferry reload does not
        // reach by pid); 0 and negative pids name process groups or every process.
        guard pid > 1 else { return .notFerryd(pid: pid, reason: pid == 1 ? "pid 1 is the init process" : "not a process id") }
        guard exists else { return .daemonExited(pid: pid) }
        // The shipped unit's ProtectProc=invisible and ProcSubset=pid hide ferryd's /proc entry
        // even from its own ExecReload=; there systemd's $MAINPID is the unit's main process,
        // which systemd tracks itself, and is taken as it is.
        guard let identity else { return namedBySystemd ? nil : .unverifiable(pid: pid) }
        guard identity.name == expectedName else { return .notFerryd(pid: pid, reason: "it is \(identity.name), not \(expectedName)") }
        if let recordedStart, recordedStart != identity.startTicks {
            return .notFerryd(pid: pid, reason: "it started after the ferryd that wrote the pid file (the pid was reused)")
        }
        return nil
    }

    /// The pid to signal, verified: `explicit` (`--pid`), else `$MAINPID`, else the pid file.
    /// A pid file naming no running ferryd is removed (a ferryd that stopped without removing
    /// it, a pid reused since) and reported as ``ReloadError/stalePIDFile(path:pid:reason:)``.
    public static func resolve(explicit: Int32?, environment: [String: String], directory: String,
                               expectedName: String = daemonName, proc: String = "/proc") throws(ReloadError) -> Int32 {
        let pid: Int32
        var recordedStart: UInt64?
        let source: Source
        if let explicit {
            (pid, source) = (explicit, .option)
        } else if let main = environment["MAINPID"].flatMap(Int32.init), main > 0 {
            (pid, source) = (main, .mainPID)
        } else {
            pid = try ReloadAcknowledgement.readPIDFile(directory: directory)
            source = .pidFile(path: ReloadAcknowledgement.pidFilePath(directory))
            // The state file the same ferryd wrote at start says when it started.
            if let state = ReloadAcknowledgement.readState(directory: directory), state.pid == pid { recordedStart = state.startTicks }
        }
        let identity = pid > 1 ? ProcessFacts.read(pid: pid, proc: proc) : nil
        let exists = pid > 1 && (kill(pid, 0) == 0 || errno == EPERM)
        // systemd sets INVOCATION_ID for the processes it runs for a unit, ExecReload= too. Both
        // are only environment variables, which any shell can set: the pid is taken unseen only
        // when the pid file and the reload state ferryd wrote at start in its runtime directory
        // (writable by ferryd and root alone) name it as well.
        let namedBySystemd = source == .mainPID && environment["INVOCATION_ID"] != nil && corroborated(pid, directory: directory)
        guard let refusal = verdict(pid: pid, identity: identity, recordedStart: recordedStart, exists: exists,
                                    namedBySystemd: namedBySystemd, expectedName: expectedName) else {
            return pid
        }
        if case .pidFile(let path) = source {
            switch refusal {
            case .daemonExited:
                unlink(path)
                throw .stalePIDFile(path: path, pid: pid, reason: "no process has that pid")
            case .notFerryd(_, let reason):
                unlink(path)
                throw .stalePIDFile(path: path, pid: pid, reason: reason)
            default: break
            }
        }
        throw refusal
    }

    /// Whether the ferryd whose runtime directory is `directory` wrote `pid` as its own: its
    /// pid file and its reload state both name it.
    static func corroborated(_ pid: Int32, directory: String) -> Bool {
        (try? ReloadAcknowledgement.readPIDFile(directory: directory)) == pid && ReloadAcknowledgement.readState(directory: directory)?.pid == pid
    }
}
