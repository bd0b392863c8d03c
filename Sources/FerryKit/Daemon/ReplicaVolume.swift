import Foundation

/// Whether the file system holding the replica can take writes, found by writing a small probe
/// file beside it.
///
/// The daemon asks when a pass fails in the database, because SQLite does not always say why:
/// on a file system the kernel remounted read-only (ext4 `errors=remount-ro`), a write fails as
/// `SQLITE_IOERR_WRITE` ("disk I/O error") with `sqlite3_system_errno()` 0, and a full disk
/// may surface as an I/O error too. An admin reading STATUS= or the journal needs "read-only"
/// or "full", not "disk I/O error".
///
///     switch try ReplicaVolume.probe(databasePath: "/var/lib/ferry/ferry.db") {
///     case .writable: ...
///     case .readOnly, .full: ...
///     }
public enum ReplicaVolume: Sendable, Equatable {
    case writable
    /// The file system (or the directory, for our user) refuses writes: EROFS, EACCES, EPERM.
    case readOnly
    /// No space (or quota) left: ENOSPC, EDQUOT.
    case full

    /// Bytes written by the probe: enough to need a new block on any file system, so a disk
    /// with no free block answers ENOSPC.
    static let probeSize = 4096

    /// Writes, then removes, a hidden probe file in the database's directory.
    /// Throws ``ReplicaVolumeError`` for failures that say nothing about writability (the
    /// directory is gone, too many open files).
    public static func probe(databasePath: String) throws(ReplicaVolumeError) -> ReplicaVolume {
        let directory = (databasePath as NSString).deletingLastPathComponent
        let probe = (directory.isEmpty ? "." : directory) + "/.ferry-probe-\(getpid())"
        let descriptor = open(probe, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return try classify(errno, operation: "open", path: probe) }
        defer {
            close(descriptor)
            unlink(probe)
        }
        let bytes = [UInt8](repeating: 0, count: probeSize)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress! + offset, bytes.count - offset) }
            if written < 0 {
                if errno == EINTR { continue }
                return try classify(errno, operation: "write", path: probe)
            }
            offset += written
        }
        // tmpfs and most file systems allocate on write; others may only fail at flush.
        if fsync(descriptor) != 0 { return try classify(errno, operation: "fsync", path: probe) }
        return .writable
    }

    /// The one place the probe's errno values become answers or typed errors.
    private static func classify(_ code: Int32, operation: String, path: String) throws(ReplicaVolumeError) -> ReplicaVolume {
        switch code {
        case EROFS, EACCES, EPERM: return .readOnly
        case ENOSPC, EDQUOT: return .full
        case EBADF, EFAULT, EINVAL:
            // A bad descriptor or buffer is our bug, not the disk's.
            preconditionFailure("ReplicaVolume.probe: \(operation) \(path): errno \(code)")
        default: throw ReplicaVolumeError(code: code, operation: operation, path: path)
        }
    }

    /// A few words for STATUS= and the journal; nil when writable.
    public var problem: String? {
        switch self {
        case .writable: nil
        case .readOnly: "replica file system is read-only"
        case .full: "replica disk is full"
        }
    }
}
