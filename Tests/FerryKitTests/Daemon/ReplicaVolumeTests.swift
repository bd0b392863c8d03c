import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// ``ReplicaVolume/probe(databasePath:)`` on real file systems: a temporary directory, a full
/// tmpfs and a read-only tmpfs. The last two need root (mount); without it they are skipped
/// on a developer's machine and fail under CI=true.
@Suite("Replica volume probe", .serialized)
struct ReplicaVolumeTests {
    /// Mounts a tmpfs with `options` under a temporary directory for the body; nil when the
    /// mount is refused (not root).
    static func withTmpfs(_ options: String, _ body: (String) throws -> Void) throws -> Bool {
        let directory = try TemporaryDirectory()
        let mountPoint = directory.path("volume")
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        guard Shell.succeeds(["mount", "-t", "tmpfs", "-o", options, "tmpfs", mountPoint]) else { return false }
        defer { _ = Shell.succeeds(["umount", "-l", mountPoint]) }
        try body(mountPoint)
        return true
    }

    @Test func aTemporaryDirectoryIsWritableAndTheProbeLeavesNothingBehind() throws {
        let directory = try TemporaryDirectory()
        let volume: ReplicaVolume = try ReplicaVolume.probe(databasePath: directory.path("ferry.db"))
        #expect(volume == .writable)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).isEmpty)
    }

    @Test func aFullTmpfsIsFull() throws {
        let mounted = try Self.withTmpfs("size=256k") { mountPoint in
            // Fill every block; the probe's 4 KiB write must then fail with ENOSPC.
            #expect(FileManager.default.createFile(atPath: mountPoint + "/filler", contents: nil))
            let filler = try #require(FileHandle(forWritingAtPath: mountPoint + "/filler"))
            let block = Data(count: 4096)
            while (try? filler.write(contentsOf: block)) != nil {}
            try? filler.close()
            let full: ReplicaVolume = try ReplicaVolume.probe(databasePath: mountPoint + "/ferry.db")
            #expect(full == .full)
            #expect(full.problem == "replica disk is full")
            try FileManager.default.removeItem(atPath: mountPoint + "/filler")
            let freed: ReplicaVolume = try ReplicaVolume.probe(databasePath: mountPoint + "/ferry.db")
            #expect(freed == .writable)
        }
        if !mounted { #expect(!isCI, "cannot mount a tmpfs (needs root) for the full-volume probe") }
    }

    @Test func aReadOnlyTmpfsIsReadOnly() throws {
        let mounted = try Self.withTmpfs("size=1m,ro") { mountPoint in
            let volume: ReplicaVolume = try ReplicaVolume.probe(databasePath: mountPoint + "/ferry.db")
            #expect(volume == .readOnly)
            #expect(volume.problem == "replica file system is read-only")
        }
        if !mounted { #expect(!isCI, "cannot mount a tmpfs (needs root) for the read-only probe") }
    }

    @Test func aMissingDirectoryIsATypedError() throws {
        let directory = try TemporaryDirectory()
        #expect(throws: ReplicaVolumeError(code: ENOENT, operation: "open", path: directory.path("gone") + "/.ferry-probe-\(getpid())")) {
            try ReplicaVolume.probe(databasePath: directory.path("gone") + "/ferry.db")
        }
    }
}
