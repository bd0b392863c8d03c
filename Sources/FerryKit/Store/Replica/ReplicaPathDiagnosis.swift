import Foundation

/// Why a replica file cannot be opened or created, in words an admin can act on. SQLite says
/// only "unable to open database file", often with errno 2 left over from looking for a
/// journal; the file system knows better: a missing directory, a directory the user may not
/// write, a read-only mount, a file owned by someone else.
enum ReplicaPathDiagnosis {
    /// The first thing found wrong with opening `path` read-write (or read-only), nil when
    /// nothing is.
    static func problem(opening path: String, readOnly: Bool = false) -> String? {
        let directory = (path as NSString).deletingLastPathComponent.isEmpty ? "." : (path as NSString).deletingLastPathComponent
        let fileManager = FileManager.default
        var isDirectory: ObjCBool = false
        guard fileManager.fileExists(atPath: directory, isDirectory: &isDirectory) else {
            return "the directory \(directory) does not exist"
        }
        guard isDirectory.boolValue else { return "\(directory) is not a directory" }
        let exists = fileManager.fileExists(atPath: path)
        if !readOnly, isReadOnlyMount(directory) {
            return "\(directory) is on a read-only file system"
        }
        if exists {
            let mode: Int32 = readOnly ? R_OK : R_OK | W_OK
            if access(path, mode) != 0 {
                return "\(user()) may not \(readOnly ? "read" : "write") \(path) (\(ownership(path)))"
            }
        }
        // SQLite creates -wal and -shm files beside the database (and the file itself when new).
        let needed: Int32 = readOnly ? X_OK : W_OK | X_OK
        if (!exists || !readOnly), access(directory, needed) != 0 {
            return "\(user()) may not create files in \(directory) (\(ownership(directory))), which SQLite needs for the database and its -wal and -shm files"
        }
        return nil
    }

    private static func isReadOnlyMount(_ directory: String) -> Bool {
        var info = statvfs()
        return statvfs(directory, &info) == 0 && info.f_flag & UInt(ST_RDONLY) != 0
    }

    static func user() -> String {
        userName(geteuid()).map { "user \($0)" } ?? "user \(geteuid())"
    }

    static func userName(_ uid: uid_t) -> String? {
        getpwuid(uid).flatMap { $0.pointee.pw_name.map { String(cString: $0) } }
    }

    static func groupName(_ gid: gid_t) -> String? {
        getgrgid(gid).flatMap { $0.pointee.gr_name.map { String(cString: $0) } }
    }

    /// `owner O, group G, mode 750`, as `ls -l` would tell.
    static func ownership(_ path: String) -> String {
        var info = stat()
        guard stat(path, &info) == 0 else { return "cannot stat it" }
        let owner = userName(info.st_uid) ?? "\(info.st_uid)"
        let group = groupName(info.st_gid) ?? "\(info.st_gid)"
        return "owner \(owner), group \(group), mode \(String(info.st_mode & 0o777, radix: 8))"
    }
}
