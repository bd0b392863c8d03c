import Foundation

/// Why a command that reads a replica (`ferry status`, `ferry changes`, `ferry conflicts`)
/// cannot: there is none yet, or there is one this user may not read. `FileManager` answers
/// "no such file" for both when a directory on the way may not be entered (`/var/lib/ferry`
/// is 0750, group `ferry`), which sent people off to run `ferry sync` for a replica that
/// existed all along.
public enum ReplicaAccessError: Error, Equatable, CustomStringConvertible {
    /// No file at the path: nothing has synced yet.
    case missing(path: String)
    /// The file or a directory on the way may not be read or entered by this user.
    case denied(path: String, reason: String)

    public var description: String {
        switch self {
        case .missing(let path):
            // The service's replica is ferryd's to make: root's `ferry sync` of another file
            // that sets no database is refused rather than writing into it.
            path.hasPrefix("/var/lib/ferry/")
                ? "no database at \(path) yet: it is the service's replica, which ferryd makes (systemctl start ferryd); for a replica of your own, set database = in your file"
                : "no database at \(path) yet: run `ferry sync` or start ferryd first"
        case .denied(let path, let reason):
            "permission denied reading \(path): \(reason)"
        }
    }

    /// Nil when `path` can be opened for reading; else why not. `access` answers 0 or the
    /// errno of `access(2)` (tests give their own).
    public static func check(readable path: String,
                             access: (String, Int32) -> Int32 = { Glibc.access($0, $1) == 0 ? 0 : errno }) -> ReplicaAccessError? {
        let failure = access(path, R_OK)
        if failure == 0 { return nil }
        // Walk down from the root: the first directory that may not be entered is the cause.
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        var directory = ""
        for component in (absolute as NSString).deletingLastPathComponent.split(separator: "/") {
            directory += "/" + component
            switch access(directory, X_OK) {
            case 0: continue
            case ENOENT, ENOTDIR: return .missing(path: path)
            default: return .denied(path: path, reason: "\(ReplicaPathDiagnosis.user()) may not enter \(directory) (\(ReplicaPathDiagnosis.ownership(directory))); \(advice(directory))")
            }
        }
        if failure == ENOENT { return .missing(path: path) }
        return .denied(path: path, reason: "\(ReplicaPathDiagnosis.user()) may not read it (\(ReplicaPathDiagnosis.ownership(path))); \(advice(path))")
    }

    private static func advice(_ path: String) -> String {
        var info = stat()
        if stat(path, &info) == 0, let group = ReplicaPathDiagnosis.groupName(info.st_gid), info.st_mode & 0o040 != 0 {
            let name = ReplicaPathDiagnosis.userName(geteuid()) ?? "USER"
            return "members of group \(group) may: sudo usermod -aG \(group) \(name) (effective at the next login)"
        }
        return "ask whoever runs ferryd for read access"
    }
}
