import Foundation

/// The file beside a replica (`ferry.db-passes`) whose bytes say which stores a pass runs for:
/// byte N is locked by whoever runs a pass of the store with id N, with an open file
/// description's lock (`F_OFD_SETLK`).
///
/// The kernel drops such a lock when the last descriptor of its open file closes, however the
/// process ends (SIGKILL, the OOM killer, a power cut ends everything anyway), and it answers
/// whether a byte is locked to every process that may open the file. Nothing about the holder
/// is read from `/proc`: ferryd's unit hides other users' processes and the boot id there
/// (`ProtectProc=invisible`, `ProcSubset=pid`), so what ferryd and a root `ferry` computed
/// from it differed, and each took the other's claim for a dead process's.
///
/// Locks taken through one open file description never conflict with each other: the passes
/// of one connection tell themselves apart by their claim's token (``ReplicaDatabase``). Not
/// the database file itself: closing any other descriptor of it would drop SQLite's own
/// (process-wide POSIX) locks on it.
///
/// One owner at a time, as ``ReplicaDatabase``.
final class PassLockFile {
    /// A system call on the lock file that failed, and errno.
    struct Failure: Error, Equatable, CustomStringConvertible {
        let operation: String
        let path: String
        let errno: Int32

        var description: String { "cannot \(operation) \(path): \(String(cString: strerror(errno)))" }
    }

    let path: String
    private var fd: Int32
    /// The device and inode open, to notice the path naming another file (removed and made
    /// again by someone) while this holds no lock.
    private var opened: (device: UInt, inode: UInt)

    /// The lock file of the replica at `replica`.
    static func path(beside replica: String) -> String { replica + "-passes" }

    /// Opens the lock file of the replica at `replica`, making it when missing with the
    /// replica's mode, owner and group, as SQLite makes the `-wal` and `-shm` files: a root
    /// `ferry sync` of the service's replica must leave a file ferryd (user ferry) can open.
    init(beside replica: String) throws(Failure) {
        path = Self.path(beside: replica)
        (fd, opened) = try Self.open(path, like: replica)
    }

    deinit { close() }

    /// Takes the lock of `byte`; false when another open file holds it.
    func lock(_ byte: Int64) throws(Failure) -> Bool {
        var request = Self.request(F_WRLCK, byte)
        if fcntl(fd, Self.setLock, &request) == 0 { return true }
        let code = errno
        if code == EAGAIN || code == EACCES { return false }
        throw Failure(operation: "lock a byte of", path: path, errno: code)
    }

    /// Whether another open file holds the lock of `byte`.
    func isLockedElsewhere(_ byte: Int64) throws(Failure) -> Bool {
        var request = Self.request(F_WRLCK, byte)
        guard fcntl(fd, Self.getLock, &request) == 0 else { throw Failure(operation: "test a lock of", path: path, errno: errno) }
        return request.l_type != Int16(F_UNLCK)
    }

    /// Lets go of the lock of `byte`; nothing when this holds none.
    func unlock(_ byte: Int64) {
        var request = Self.request(F_UNLCK, byte)
        // Unlocking a valid descriptor's byte range cannot fail but by our own bug.
        let code = fcntl(fd, Self.setLock, &request)
        precondition(code == 0, "F_OFD_SETLK F_UNLCK on \(path): errno \(errno)")
    }

    /// Whether the path still names the file open here; false once someone removed or replaced
    /// it, when other processes lock another file than this.
    var isCurrent: Bool {
        var info = stat()
        guard stat(path, &info) == 0 else { return false }
        return (UInt(info.st_dev), UInt(info.st_ino)) == opened
    }

    /// Opens the file the path names now, letting go of every lock this held.
    func reopen(like replica: String) throws(Failure) {
        let (newFD, identity) = try Self.open(path, like: replica)
        close()
        fd = newFD
        opened = identity
    }

    /// Closes the file; the kernel drops every lock this held.
    func close() {
        guard fd >= 0 else { return }
        Glibc.close(fd)
        fd = -1
    }

    // MARK: - The system calls

    /// `F_OFD_GETLK` and `F_OFD_SETLK`: the Linux ABI's values (the same on every
    /// architecture). glibc defines them only under `_GNU_SOURCE`, which Swift's Glibc module
    /// is not built with, and `fcntl` with a pointer argument is callable from Swift as is.
    private static let getLock: Int32 = 36
    private static let setLock: Int32 = 37

    private static func request(_ type: Int32, _ byte: Int64) -> flock {
        var request = flock()
        request.l_type = Int16(type)
        request.l_whence = Int16(SEEK_SET)
        request.l_start = off_t(byte)
        request.l_len = 1
        // Must be 0 for the OFD commands (the kernel refuses anything else).
        request.l_pid = 0
        return request
    }

    /// Opens `path` read-write, first making it, whole, under a temporary name and linking it
    /// into place: nobody ever opens it before it has its mode and owner.
    private static func open(_ path: String, like replica: String) throws(Failure) -> (Int32, (device: UInt, inode: UInt)) {
        while true {
            let existing = Glibc.open(path, O_RDWR | O_CLOEXEC)
            if existing >= 0 { return (existing, try identity(of: existing, path: path)) }
            guard errno == ENOENT else { throw Failure(operation: "open", path: path, errno: errno) }
            try create(path, like: replica)
            // Made (by us or by a racing process): open it on the next turn.
        }
    }

    private static func create(_ path: String, like replica: String) throws(Failure) {
        var model = stat()
        guard stat(replica, &model) == 0 else { throw Failure(operation: "stat", path: replica, errno: errno) }
        let temporary = path + ".tmp.\(getpid())"
        let fd = Glibc.open(temporary, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failure(operation: "create", path: temporary, errno: errno) }
        defer { Glibc.close(fd); unlink(temporary) }
        // open(2) applies the umask; the replica's mode is what its readers and writers need.
        guard fchmod(fd, model.st_mode & 0o666) == 0 else { throw Failure(operation: "chmod", path: temporary, errno: errno) }
        // Only root can give a file away, and only root would make it another user's.
        if geteuid() == 0, model.st_uid != 0 || model.st_gid != 0, fchown(fd, model.st_uid, model.st_gid) != 0 {
            throw Failure(operation: "chown", path: temporary, errno: errno)
        }
        // link(2) never replaces: a file another process made meanwhile stays, and is used.
        if link(temporary, path) != 0, errno != EEXIST { throw Failure(operation: "create", path: path, errno: errno) }
    }

    private static func identity(of fd: Int32, path: String) throws(Failure) -> (device: UInt, inode: UInt) {
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let code = errno
            Glibc.close(fd)
            throw Failure(operation: "stat", path: path, errno: code)
        }
        return (UInt(info.st_dev), UInt(info.st_ino))
    }
}
