import Foundation
import Testing

/// A test server process on 127.0.0.1 that the tests start themselves.
///
/// The server prints `PORT <n>` once it listens. A server that cannot start is a skip on a
/// developer's machine and a failure in CI (`CI=true`), so a missing dependency never passes
/// silently.
final class TestServer: @unchecked Sendable {
    let port: Int
    private let process: Process

    var baseURL: String { "http://127.0.0.1:\(port)" }

    static var repositoryRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
    }

    /// Starts `executable arguments...`, waiting for its `PORT` line.
    init(executable: String, arguments: [String], environment: [String: String] = [:]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.currentDirectoryURL = Self.repositoryRoot
        var env = ProcessInfo.processInfo.environment
        env.merge(environment) { $1 }
        process.environment = env
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.standardError
        try process.run()
        self.process = process

        var buffer = Data()
        let deadline = Date().addingTimeInterval(60)
        var found: Int?
        while found == nil, Date() < deadline {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            buffer.append(chunk)
            for line in String(decoding: buffer, as: UTF8.self).split(separator: "\n") where line.hasPrefix("PORT ") {
                found = Int(line.dropFirst(5).trimmingCharacters(in: .whitespaces))
            }
        }
        guard let found else {
            process.terminate()
            throw TestServerError.didNotStart("\(executable) \(arguments.joined(separator: " "))")
        }
        port = found
    }

    /// The fault server: stdlib Python, always available where python3 is.
    static func fault(tls: (cert: String, key: String)? = nil) throws -> TestServer {
        var arguments = [repositoryRoot.appendingPathComponent("Tests/Servers/fault_server.py").path, "--port", "0"]
        if let tls {
            arguments += ["--tls-cert", tls.cert, "--tls-key", tls.key]
        }
        return try TestServer(executable: "/usr/bin/env", arguments: ["python3"] + arguments)
    }

    /// SIGTERM, then SIGKILL after a grace period: a child of the test process may inherit a
    /// signal mask with SIGTERM blocked (Foundation's Process does not reset it), and a server
    /// that ignores SIGTERM must not hang the whole test run in `waitUntilExit`.
    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        let deadline = Date().addingTimeInterval(3)
        while process.isRunning, Date() < deadline {
            usleep(10_000)
        }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
        }
        process.waitUntilExit()
    }

    deinit {
        stop()
    }

    /// GETs a URL synchronously with the curl command line (for control endpoints only).
    func control(_ path: String, method: String = "GET", body: String? = nil) throws -> Data {
        var arguments = ["-sS", "-X", method, baseURL + path]
        if let body {
            arguments += ["-H", "Content-Type: application/json", "--data-binary", body]
        }
        return try Shell.run("/usr/bin/curl", arguments)
    }
}

enum TestServerError: Error {
    case didNotStart(String)
}

/// Whether tests that need an optional server must fail instead of skip.
var isCI: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }

enum Shell {
    /// Runs a command and returns its standard output; throws when it exits non-zero.
    @discardableResult
    static func run(_ executable: String, _ arguments: [String], input: Data? = nil) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        let inputPipe = Pipe()
        if input != nil { process.standardInput = inputPipe }
        try process.run()
        if let input {
            inputPipe.fileHandleForWriting.write(input)
            try inputPipe.fileHandleForWriting.close()
        }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw ShellError.failed("\(executable) \(arguments.joined(separator: " ")) exited \(process.terminationStatus)")
        }
        return data
    }

    /// Runs `arguments` through /usr/bin/env, output discarded: whether it exited 0 (mount and
    /// umount in the disk tests, which skip or fail on their own terms when this is false).
    static func succeeds(_ arguments: [String]) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }
}

enum ShellError: Error {
    case failed(String)
}
