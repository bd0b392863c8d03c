import Foundation

/// Why `ferry reload` could not get an answer from ferryd (as opposed to ferryd answering that
/// the new configuration was refused, which is a ``ReloadResult`` with outcome `.error`).
public enum ReloadError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No pid given and no readable pid file: ferryd is not running (or runs elsewhere).
    case noPIDFile(path: String)
    case invalidPIDFile(path: String)
    /// The pid file names no running ferryd (it stopped and left the file, or the pid was
    /// reused); the file was removed and nothing was signalled.
    case stalePIDFile(path: String, pid: Int32, reason: String)
    /// The process with this pid is not ferryd (`reason` says what it is); nothing was signalled.
    case notFerryd(pid: Int32, reason: String)
    /// `/proc` shows nothing of the process (another user's, under `ProtectProc=invisible` or
    /// `hidepid=`): whether it is ferryd cannot be told, so it is not signalled.
    case unverifiable(pid: Int32)
    /// The process is gone (before or while waiting).
    case daemonExited(pid: Int32)
    /// kill(2) failed with this errno (EPERM: another user's process).
    case signalFailed(pid: Int32, errno: Int32)
    /// No acknowledgement within the timeout.
    case timedOut(pid: Int32, after: Duration)
    /// A file operation failed with this errno.
    case fileOperationFailed(operation: String, path: String, errno: Int32)

    public var description: String {
        switch self {
        case .noPIDFile(let path):
            "ferryd does not seem to run: cannot read \(path) (give --pid, or check RuntimeDirectory)"
        case .invalidPIDFile(let path):
            "\(path) does not contain a process id"
        case .stalePIDFile(let path, let pid, let reason):
            "ferryd does not seem to run: \(path) names pid \(pid), but \(reason); the stale file was removed and nothing was signalled"
        case .notFerryd(let pid, let reason):
            "pid \(pid) is not ferryd (\(reason)); nothing was signalled"
        case .unverifiable(let pid):
            "cannot tell whether pid \(pid) is ferryd: /proc shows nothing of it to this user (another user's process under ProtectProc= or hidepid=); run ferry reload as ferryd's user, or systemctl reload ferryd"
        case .daemonExited(let pid):
            "ferryd (pid \(pid)) is not running"
        case .signalFailed(let pid, let code):
            "cannot signal ferryd (pid \(pid)): \(String(cString: strerror(code)))"
        case .timedOut(let pid, let after):
            "ferryd (pid \(pid)) did not acknowledge the reload within \(ConfigurationUnits.format(after))"
        case .fileOperationFailed(let operation, let path, let code):
            "\(operation) \(path): \(String(cString: strerror(code)))"
        }
    }
}
