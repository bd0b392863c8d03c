import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// A user who may not read the replica is told so, with who may and how to join them, and the
/// command exits 74; only a replica that is not there is "nothing synced yet".
@Suite("Reading a replica one may not read")
struct ReplicaAccessTests {
    @Test func aDirectoryOneMayNotEnterIsPermissionDenied_notAMissingDatabase() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("ferry.db")
        _ = FileManager.default.createFile(atPath: path, contents: Data())
        // As a user outside the directory's group sees it: the directory may not be entered.
        let problem = ReplicaAccessError.check(readable: path) { candidate, _ in
            candidate == directory.url.path || candidate == path ? EACCES : 0
        }
        guard case .denied(_, let reason)? = problem else { Issue.record("not a permission problem: \(String(describing: problem))"); return }
        #expect(reason.contains("may not enter \(directory.url.path)"), "\(reason)")
        #expect(problem?.description.hasPrefix("permission denied reading \(path)") == true)
        #expect(FerryExitCode.for(try #require(problem)) == .database)
    }

    @Test func aFileOneMayNotReadIsPermissionDenied() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("ferry.db")
        _ = FileManager.default.createFile(atPath: path, contents: Data())
        let problem = ReplicaAccessError.check(readable: path) { candidate, _ in candidate == path ? EACCES : 0 }
        guard case .denied(_, let reason)? = problem else { Issue.record("\(String(describing: problem))"); return }
        #expect(reason.contains("may not read it"), "\(reason)")
    }

    @Test func aMissingReplicaIsNothingSyncedYet() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("ferry.db")
        #expect(ReplicaAccessError.check(readable: path) == .missing(path: path))
        #expect(ReplicaAccessError.check(readable: "/nonexistent-\(getpid())/ferry.db") == .missing(path: "/nonexistent-\(getpid())/ferry.db"))
        _ = FileManager.default.createFile(atPath: path, contents: Data())
        #expect(ReplicaAccessError.check(readable: path) == nil)
    }
}
