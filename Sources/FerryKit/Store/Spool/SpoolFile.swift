import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A scratch file beside the replica, unlinked the moment it is made: it holds a first sync's
/// sorted runs (``SortedSpool``) and vanishes with its descriptor, whatever ends the process, so
/// a crash leaves nothing behind to clean up or to mistake for data.
///
/// Every system call of the spool goes through here, and every failure becomes a
/// ``StoreError`` naming the replica and the store: a full disk is `.full`, as a full replica
/// is, since the spool lives on the replica's own file system.
final class SpoolFile {
    private var descriptor: Int32
    /// The end of what was written (runs are appended).
    private(set) var length: Int64 = 0
    private let replicaPath: String
    private let store: String

    /// Makes the file in `directory` (the replica's, which ferryd may write and which has the
    /// replica's free space) and unlinks it at once.
    init(directory: String, replicaPath: String, store: String) throws(StoreError) {
        self.replicaPath = replicaPath
        self.store = store
        descriptor = -1
        let name = "\(directory)/.ferry-spool-\(getpid())-\(UInt32.random(in: .min ... .max))"
        let opened = open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        try check(opened, "create a spool file in \(directory)")
        descriptor = opened
        _ = unlink(name)
    }

    deinit { close() }

    /// Appends `bytes`, all of them (a short write is retried; an error throws).
    func append(_ bytes: [UInt8]) throws(StoreError) {
        var done = 0
        while done < bytes.count {
            let wrote = bytes.withUnsafeBytes { pwrite(descriptor, $0.baseAddress! + done, $0.count - done, off_t(length)) }
            if wrote < 0, errno == EINTR { continue }
            try check(wrote, "write the first sync's spool")
            done += wrote
            length += Int64(wrote)
        }
    }

    /// Reads up to `count` bytes at `offset` into `buffer` from index `start`; the number read
    /// (0 at the end).
    func read(into buffer: inout [UInt8], from start: Int, count: Int, at offset: Int64) throws(StoreError) -> Int {
        precondition(start + count <= buffer.count, "spool read past its buffer")
        while true {
            let got = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress! + start, count, off_t(offset)) }
            if got < 0, errno == EINTR { continue }
            try check(got, "read the first sync's spool")
            return got
        }
    }

    /// Empties the file for the next runs, giving its blocks back.
    func truncate() throws(StoreError) {
        try check(ftruncate(descriptor, 0), "empty the first sync's spool")
        length = 0
    }

    func close() {
        guard descriptor >= 0 else { return }
        _ = Glibc.close(descriptor)
        descriptor = -1
    }

    private func check<Result: BinaryInteger>(_ result: Result, _ action: String) throws(StoreError) {
        guard result < 0 else { return }
        let code = errno
        let kind: StoreError.Kind = switch code {
        case ENOSPC, EDQUOT: .full
        case EROFS, EACCES, EPERM: .readOnly
        default: .io
        }
        throw StoreError(kind, path: replicaPath, store: store,
                         message: "could not \(action) (errno \(code): \(String(cString: strerror(code))))")
    }
}
