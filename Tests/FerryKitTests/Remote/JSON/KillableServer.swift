import Foundation
@testable import FerryKit

/// A Python test server that is killed by pid when this goes away.
///
/// Servers started from the test process inherit a signal mask with SIGTERM (and SIGCHLD)
/// blocked here, so `TestServer.stop()` (terminate + wait) would wait forever. The server's pid
/// goes to a file through `exec`, and deinit sends SIGKILL before TestServer's own deinit runs.
final class KillableServer: @unchecked Sendable {
    let server: TestServer
    private let pidFile: String

    init(script: String, arguments: [String] = []) throws {
        let path = TestServer.repositoryRoot.appendingPathComponent(script).path
        pidFile = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-server-\(UUID().uuidString).pid").path
        let quoted = ([path, "--port", "0"] + arguments).map { "'\($0)'" }.joined(separator: " ")
        server = try TestServer(executable: "/bin/sh", arguments: ["-c", "echo $$ > \"$0\"; exec python3 \(quoted)", pidFile])
    }

    /// Any command that listens on `port` (it need not print PORT: the wrapper does).
    init(shellCommand: String, port: Int) throws {
        pidFile = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-server-\(UUID().uuidString).pid").path
        server = try TestServer(executable: "/bin/sh", arguments: ["-c", "echo $$ > \"$0\"; echo PORT \(port); exec \(shellCommand)", pidFile])
    }

    var baseURL: String { server.baseURL }

    func control(_ path: String, method: String = "GET", body: String? = nil) throws -> Data {
        try server.control(path, method: method, body: body)
    }

    deinit {
        if let text = try? String(contentsOfFile: pidFile, encoding: .utf8), let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
            kill(pid, SIGKILL)
        }
        try? FileManager.default.removeItem(atPath: pidFile)
    }
}
