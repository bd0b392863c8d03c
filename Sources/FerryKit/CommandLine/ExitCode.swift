/// Exit codes shared by `ferryd` and `ferry`, from sysexits.h where one fits, so scripts and
/// systemd (`RestartPreventExitStatus=`) can tell a typo from an outage.
public enum FerryExitCode: Int32, Sendable {
    case success = 0
    /// A pass failed, or a reload was refused.
    case failure = 1
    /// Wrong arguments.
    case usage = 64
    /// The remote is unreachable or failing (retry later).
    case unavailable = 69
    /// The database cannot be opened or written (full, read-only, locked, not Ferry's).
    case database = 74
    /// The remote refused the credentials.
    case permission = 77
    /// The configuration is invalid.
    case configuration = 78

    /// The exit code for an error that ended a command.
    public static func `for`(_ error: any Error) -> FerryExitCode {
        switch error {
        case is ConfigurationErrors: return .configuration
        case is StoreError, is DatabaseLocationError: return .database
        case let error as SyncError:
            switch error.kind {
            case .unauthorized: return .permission
            case .store: return .database
            case .configuration: return .configuration
            case .transport, .httpStatus, .rateLimited: return .unavailable
            default: return .failure
            }
        default: return .failure
        }
    }
}
