import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// A program that may read the replica but not write its directory (another user) reads it:
/// with `sqlite3`, `ferry status` and `ferry changes`, after ferryd's connection has closed.
@Suite("Read-only consumers")
struct ReadOnlyConsumerTests {
    static let ferry = FerrydProcessTests.binary("ferry")

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: ferry), "build ferry first: swift build"))
    func anotherUserReadsTheReplicaWithoutWritingItsDirectory() throws {
        guard getuid() == 0, Shell.succeeds(["runuser", "-u", "nobody", "--", "true"]) else {
            // Another user is needed: root runs this (CI does).
            try #require(!isCI, "CI runs as root and must check this")
            return
        }
        let directory = try TemporaryDirectory("ferry-readers")
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory.path)
        let path = directory.path("replica.db")
        let replica = try ReplicaDatabase(path: path)
        try replica.prepare(StoreDefinition(name: "items"))
        _ = try replica.apply(ChangeBatch(changes: (0..<5).map { record("r\($0)", version: "1") }, cursor: "c"), to: "items")
        try replica.recordSuccess(of: "items", at: Date(), counts: MergeCounts(inserted: 5))
        replica.close()
        // The directory and the files are readable by others, writable by nobody but root.
        for file in [path, path + "-wal", path + "-shm"] {
            #expect(FileManager.default.fileExists(atPath: file), "\(file) is kept after the writer closed")
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file)
        }
        let asNobody = ["runuser", "-u", "nobody", "--"]
        // The build may lie under a directory other users cannot enter (a home directory is 0700
        // on Debian 12): nobody runs a copy of ferry in the test's directory.
        let ferry = directory.path("ferry")
        try FileManager.default.copyItem(atPath: Self.ferry, toPath: ferry)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: ferry)
        let count = try Shell.run("/usr/bin/env", asNobody + ["sqlite3", path, "select count(*) from items"])
        #expect(String(decoding: count, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) == "5")
        let status = try Shell.run("/usr/bin/env", asNobody + [ferry, "status", "--json", "--database", path, "--config", "/nonexistent.conf"])
        #expect(String(decoding: status, as: UTF8.self).contains(#""records":5"#))
        let changes = try Shell.run("/usr/bin/env", asNobody + [ferry, "changes", "--database", path, "--config", "/nonexistent.conf"])
        #expect(String(decoding: changes, as: UTF8.self).split(separator: "\n").count == 5)

        // A replica in a directory nobody may not enter: permission denied, exit 74, not "no
        // database yet".
        let closed = directory.path("closed")
        try FileManager.default.createDirectory(atPath: closed, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        try FileManager.default.copyItem(atPath: path, toPath: closed + "/replica.db")
        let (status74, _, words) = try Shell.outcome("/usr/bin/env", asNobody + [ferry, "status", "--database", closed + "/replica.db", "--config", "/nonexistent.conf"])
        #expect(status74 == FerryExitCode.database.rawValue, "\(words)")
        #expect(words.contains("permission denied") && words.contains("may not enter \(closed)"), "\(words)")

        // The same for a configuration: denied, not "no such file (create it ...)", and the
        // same exit; one that may be entered but not read says so of the file itself.
        try "[ferry]\n".write(toFile: closed + "/ferry.conf", atomically: true, encoding: .utf8)
        let (configStatus, _, configWords) = try Shell.outcome("/usr/bin/env", asNobody + [ferry, "check-config", "--config", closed + "/ferry.conf"])
        #expect(configStatus == FerryExitCode.database.rawValue, "\(configWords)")
        #expect(configWords.contains("permission denied") && configWords.contains("may not enter \(closed)") && !configWords.contains("no such file"), "\(configWords)")
        let unreadable = directory.path("private.conf")
        try "[ferry]\n".write(toFile: unreadable, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: unreadable)
        let (fileStatus, _, fileWords) = try Shell.outcome("/usr/bin/env", asNobody + [ferry, "check-config", "--config", unreadable])
        #expect(fileStatus == FerryExitCode.database.rawValue, "\(fileWords)")
        #expect(fileWords.contains("permission denied") && fileWords.contains("may not read it"), "\(fileWords)")
    }
}
