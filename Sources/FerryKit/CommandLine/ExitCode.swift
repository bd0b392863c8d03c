/// Exit codes shared by `ferryd` and `ferry`, from sysexits.h where one fits, so scripts and
/// systemd (`RestartPreventExitStatus=`) can tell a typo from an outage.
public enum FerryExitCode: Int32, Sendable, CaseIterable {
    case success = 0
    /// A pass failed, or a reload was refused.
    case failure = 1
    /// Every pass finished, but a replica knowingly differs from its remote (a refused or
    /// failed sweep, records not stored, pagination that ended early); `ferry status` says how.
    case incomplete = 2
    /// Wrong arguments.
    case usage = 64
    /// A record could not be stored and the store's policy is `on-bad-record = fail`.
    case dataError = 65
    /// The remote is unreachable or failing (retry later).
    case unavailable = 69
    /// The database cannot be opened or written (full, read-only, locked, not Ferry's), or
    /// this user may not read it or the configuration.
    case database = 74
    /// Another process is syncing the store (ferryd, or another `ferry sync` or `ferry push`)
    /// and did not finish within the wait: nothing was done; try again.
    case busy = 75
    /// The remote refused the credentials.
    case permission = 77
    /// The configuration is invalid.
    case configuration = 78
    /// Interrupted (Ctrl-C, SIGINT): 128 + 2, as shells report it.
    case interrupted = 130

    /// The exit code for an error that ended a command.
    public static func `for`(_ error: any Error) -> FerryExitCode {
        switch error {
        case let error as ConfigurationErrors: return error.isPermissionDenied ? .database : .configuration
        case is InstanceNameError, is OneShotSyncError, is DiscoveryTargetError: return .usage
        case is StoreError, is DatabaseLocationError: return .database
        case let error as ReplicaAccessError:
            // Not permitted to read it: a database error (74); nothing synced yet: a failure.
            if case .denied = error { return .database } else { return .failure }
        case let error as DeviceAuthorizationError: return error.exitCode
        case let error as SyncError:
            switch error.kind {
            // The same failure exits the same way whatever the kind: every answer the remote
            // gets wrong is "unavailable", however it is wrong.
            case .unauthorized: return .permission
            case .store: return .database
            case .configuration: return .configuration
            case .transport, .httpStatus, .rateLimited, .malformedResponse, .remote: return .unavailable
            case .badRecord: return .dataError
            case .busy: return .busy
            case .cancelled: return .interrupted
            }
        default: return .failure
        }
    }
}

extension FerryExitCode {
    /// A few words per code, for `--help`; the README's table says the same at length.
    public var summary: String {
        switch self {
        case .success: "ok"
        case .failure: "a failure no other code names (nothing synced yet, a reload not acknowledged)"
        case .incomplete: "synced but a replica is incomplete (see ferry status)"
        case .usage: "usage"
        case .dataError: "a bad record under on-bad-record = fail"
        case .unavailable: "the remote (or its token endpoint) unavailable or answering wrongly"
        case .database: "database error, or a replica or configuration this user may not read"
        case .busy: "another process is syncing the store (nothing done; try again)"
        case .permission: "credentials refused"
        case .configuration: "invalid configuration (also a reload ferryd refused)"
        case .interrupted: "interrupted"
        }
    }

    /// Every code with its summary, as `ferry --help` lists them.
    public static var helpText: String {
        "Exit codes: " + allCases.map { "\($0.rawValue) \($0.summary)" }.joined(separator: ", ") + "."
    }
}

/// The exit code of `ferry sync` over several stores' passes.
public enum SyncOutcome {
    /// Which code wins when stores end differently, first first: the same stores give the same
    /// code whatever their order on the command line. An interruption (the person asked to
    /// stop), then what the person has to fix before anything can work (the file, the
    /// credentials, the local database, a bad record the policy refuses), then what passes on
    /// its own (the remote, another process syncing), then an unnamed failure, then a replica
    /// left incomplete.
    public static let precedence: [FerryExitCode] = [.interrupted, .usage, .configuration, .permission, .database, .dataError,
                                                     .unavailable, .busy, .failure, .incomplete, .success]

    /// The code of `codes` that ``precedence`` puts first; 0 for none.
    public static func worst(_ codes: some Sequence<FerryExitCode>) -> FerryExitCode {
        let present = Set(codes)
        return precedence.first(where: present.contains) ?? .success
    }

    /// Every pass's code (a failure's, ``FerryExitCode/incomplete`` for a pass that left its
    /// replica knowingly different, else 0), the one ``precedence`` puts first.
    public static func exitCode(_ results: [Result<PassReport, SyncError>]) -> FerryExitCode {
        worst(results.map { result in
            switch result {
            case .success(let report): report.isComplete ? .success : .incomplete
            case .failure(let error): FerryExitCode.for(error)
            }
        })
    }
}

extension DeviceAuthorizationError {
    /// `ferry auth`'s exit status.
    public var exitCode: FerryExitCode {
        switch self {
        case .unknownStore, .notOAuth2: .usage
        case .noDeviceURL: .configuration
        case .refused, .denied, .expired, .noRefreshToken: .permission
        case .transfer: .unavailable
        case .notSaved: .database
        }
    }
}
