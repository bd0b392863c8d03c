import Foundation

/// Replaces a small file's whole content so that a reader, or the file after a crash at any
/// instant, holds the old content or the new one, never a mix or nothing.
public enum AtomicFile {
    /// Why a write did not happen: the system call, the path and errno.
    public struct WriteError: Error, Sendable, Equatable, CustomStringConvertible {
        public let operation: String
        public let path: String
        public let errno: Int32

        public var description: String {
            "cannot \(operation) \(path): \(String(cString: strerror(errno)))"
        }
    }

    /// Writes `data` to a temporary file beside `path`, then renames it over `path`. `mode`:
    /// exactly these permissions, whatever the umask (a secret's file); nil: 0644 less the
    /// umask. `durable`: fsync the file before the rename and the directory after it, so the
    /// new content survives a power cut once this returns (what a rotated credential needs;
    /// a status file that is rewritten every few seconds does not).
    /// `owner`: who the file belongs to (root writing a file a service user reads).
    static func write(_ data: Data, to path: String, mode: mode_t? = nil, owner: (user: uid_t, group: gid_t)? = nil,
                      durable: Bool = false) throws(WriteError) {
        let temporary = path + ".tmp.\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode ?? 0o644)
        guard fd >= 0 else { throw WriteError(operation: "create", path: temporary, errno: errno) }
        var failure: WriteError?
        // open(2) applies the umask, and O_TRUNC keeps a leftover temporary file's mode: set it
        // before a byte of the content is there.
        if let mode, fchmod(fd, mode) != 0 { failure = WriteError(operation: "chmod", path: temporary, errno: errno) }
        if failure == nil, let owner, fchown(fd, owner.user, owner.group) != 0 {
            failure = WriteError(operation: "chown", path: temporary, errno: errno)
        }
        if failure == nil, let code = writeAll(data, to: fd) { failure = WriteError(operation: "write", path: temporary, errno: code) }
        if failure == nil, durable, fsync(fd) != 0 { failure = WriteError(operation: "fsync", path: temporary, errno: errno) }
        close(fd)
        if let failure {
            unlink(temporary)
            throw failure
        }
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw WriteError(operation: "rename", path: path, errno: code)
        }
        guard durable else { return }
        let directory = (path as NSString).deletingLastPathComponent
        let directoryFD = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard directoryFD >= 0 else { throw WriteError(operation: "open", path: directory, errno: errno) }
        defer { close(directoryFD) }
        guard fsync(directoryFD) == 0 else { throw WriteError(operation: "fsync", path: directory, errno: errno) }
    }

    /// Writes every byte, through interruptions; errno of the failure, nil when all went.
    private static func writeAll(_ data: Data, to fd: Int32) -> Int32? {
        data.withUnsafeBytes { raw -> Int32? in
            var offset = 0
            while offset < raw.count {
                let written = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                offset += written
            }
            return nil
        }
    }
}
