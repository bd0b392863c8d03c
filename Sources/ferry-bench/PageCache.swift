import Foundation

/// The replica's files and the page cache, for timing a pass "cold": as on a machine that
/// reclaimed the replica's pages (these machines drop page-cache pages left idle for about a
/// minute, so a daemon's next pass often finds its replica on disk only).
enum PageCache {
    /// The replica's files: the database, its WAL and the WAL's shared-memory index.
    static func replicaFiles(_ database: String) -> [String] { [database, database + "-wal", database + "-shm"] }

    /// How the files left the page cache.
    enum Eviction: String {
        /// `fsync`, then `posix_fadvise(POSIX_FADV_DONTNEED)` on each file: needs no root. Pages
        /// mapped by a process (SQLite maps the -shm) stay.
        case fadvise = "posix_fadvise"
        /// `sync`, then `echo 3 > /proc/sys/vm/drop_caches`: the whole machine's clean caches (root).
        case dropCaches = "drop_caches"
        /// Neither worked (fadvise left them cached, and the process is not root).
        case notEvicted = "not_evicted"
    }

    /// What ``evict(_:)`` did: the bytes of the files cached before and after.
    struct Evicted {
        var method: Eviction
        var cachedBefore: Int64
        var cachedAfter: Int64
        var fileBytes: Int64
    }

    /// Writes back and drops the pages of `paths` (those that exist) from the page cache, then
    /// checks with `mincore` that they left it. When fadvise leaves more than 2% of the files'
    /// bytes cached, falls back to `drop_caches` as root, and says which was used.
    static func evict(_ paths: [String]) -> Evicted {
        let existing = paths.filter { FileManager.default.fileExists(atPath: $0) }
        let before = cachedBytes(existing)
        for path in existing {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { continue }
            // Dirty pages are not dropped: written back first.
            _ = fsync(fd)
            _ = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)
            close(fd)
        }
        let size = existing.reduce(Int64(0)) { $0 + fileSize($1) }
        var evicted = Evicted(method: .fadvise, cachedBefore: before, cachedAfter: cachedBytes(existing), fileBytes: size)
        // The -shm is mapped by the pass's own connection, and small: not counted against it.
        let tolerance = max(size / 50, sharedMemoryBytes(existing))
        if evicted.cachedAfter > tolerance {
            if geteuid() == 0 {
                sync()
                if (try? "3\n".write(toFile: "/proc/sys/vm/drop_caches", atomically: false, encoding: .utf8)) != nil {
                    evicted.method = .dropCaches
                    evicted.cachedAfter = cachedBytes(existing)
                } else {
                    evicted.method = .notEvicted
                }
            } else {
                evicted.method = .notEvicted
            }
        }
        return evicted
    }

    /// Bytes of `paths` in the page cache now (`mincore` over a read-only mapping of each,
    /// which faults nothing in).
    static func cachedBytes(_ paths: [String]) -> Int64 {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        var total: Int64 = 0
        for path in paths {
            let length = Int(fileSize(path))
            guard length > 0 else { continue }
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { continue }
            defer { close(fd) }
            guard let mapped = mmap(nil, length, PROT_READ, MAP_SHARED, fd, 0), mapped != UnsafeMutableRawPointer(bitPattern: -1) else { continue }
            defer { munmap(mapped, length) }
            var resident = [UInt8](repeating: 0, count: (length + page - 1) / page)
            guard mincore(mapped, length, &resident) == 0 else { continue }
            total += Int64(resident.reduce(0) { $0 + Int($1 & 1) }) * Int64(page)
        }
        return total
    }

    /// `read_bytes` of /proc/self/io: what this process (every thread) had fetched from
    /// storage, read-ahead included; pages found in the page cache are not counted. -1 if
    /// unreadable.
    static func bytesRead() -> Int64 {
        guard let io = try? String(contentsOfFile: "/proc/self/io", encoding: .utf8),
              let line = io.split(separator: "\n").first(where: { $0.hasPrefix("read_bytes:") }),
              let value = Int64(line.split(separator: " ").last ?? "") else { return -1 }
        return value
    }

    static func fileSize(_ path: String) -> Int64 {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int).map(Int64.init) ?? 0
    }

    private static func sharedMemoryBytes(_ paths: [String]) -> Int64 {
        paths.filter { $0.hasSuffix("-shm") }.reduce(Int64(0)) { $0 + fileSize($1) }
    }
}
