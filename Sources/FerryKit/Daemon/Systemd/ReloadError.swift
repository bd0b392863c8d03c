import Foundation

/// Why `ferry reload` could not get an answer from ferryd (as opposed to ferryd answering that
/// the new configuration was refused, which is a ``ReloadResult`` with outcome `.error`).
public enum ReloadError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No pid given and no readable pid file: ferryd is not running (or runs elsewhere).
    case noPIDFile(path: String)
    case invalidPIDFile(path: String)
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
