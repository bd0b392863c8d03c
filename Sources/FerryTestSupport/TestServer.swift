import Foundation

/// A server process on 127.0.0.1 that a test or a benchmark starts itself and always stops
/// again: Ferry's Python servers (`Tests/Servers/*.py`, which print `PORT <n>` once they
/// listen), pip-installed servers (Radicale, Xandikos, Datasette), or nginx (``NginxServer``).
///
/// A server that cannot start is a skip on a developer's machine and a failure in CI
/// (`CI=true`), so a missing dependency never passes silently.
public protocol LoopbackServer: AnyObject {
    var port: Int { get }
    /// What it is, for a benchmark's labels ("fault_server.py", "nginx").
    var name: String { get }
    /// Stops the process; idempotent.
    func stop()
}

extension LoopbackServer {
    public var baseURL: String { "http://127.0.0.1:\(port)" }
}

/// A process that prints `PORT <n>` on its standard output once it listens.
public final class TestServer: LoopbackServer, @unchecked Sendable {
    public let port: Int
    public let name: String
    /// The lines it printed up to and including its `PORT` line (`dav_servers.py` prints the
    /// collections' paths before it).
    public let outputLines: [String]
    private let process: Process

    /// The repository's root (the tests' working directory, where `Tests/Servers` is).
    public static var repositoryRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    /// Starts `executable arguments...`, waiting for its `PORT` line.
    public init(executable: String, arguments: [String], environment: [String: String] = [:]) throws {
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
        name = arguments.first { $0.hasSuffix(".py") }.map { ($0 as NSString).lastPathComponent } ?? (executable as NSString).lastPathComponent

        var buffer = Data()
        let deadline = Date().addingTimeInterval(60)
        var found: Int?
        var lines: [String] = []
        while found == nil, Date() < deadline {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            buffer.append(chunk)
            lines = String(decoding: buffer, as: UTF8.self).split(separator: "\n").map(String.init)
            for line in lines where line.hasPrefix("PORT ") {
                found = Int(line.dropFirst(5).trimmingCharacters(in: .whitespaces))
            }
        }
        guard let found else {
            Self.kill(process)
            throw TestServerError.didNotStart("\(executable) \(arguments.joined(separator: " "))")
        }
        port = found
        outputLines = lines
    }

    /// `Tests/Servers/<script>` on a port the kernel picks.
    public static func python(_ script: String, arguments: [String] = []) throws -> TestServer {
        let path = repositoryRoot.appendingPathComponent("Tests/Servers").appendingPathComponent(script).path
        return try TestServer(executable: "/usr/bin/env", arguments: ["python3", path, "--port", "0"] + arguments)
    }

    /// The fault server: stdlib Python, always available where python3 is.
    public static func fault(tls: (cert: String, key: String)? = nil) throws -> TestServer {
        try python("fault_server.py", arguments: tls.map { ["--tls-cert", $0.cert, "--tls-key", $0.key] } ?? [])
    }

    /// Any command that listens on `port` without saying so (Datasette): the shell says it,
    /// then becomes the command, so stopping the process stops the server.
    public static func command(_ shellCommand: String, port: Int) throws -> TestServer {
        try TestServer(executable: "/bin/sh", arguments: ["-c", "echo PORT \(port); exec \(shellCommand)"])
    }

    /// SIGTERM, then SIGKILL after a grace period: a child of the test process may inherit a
    /// signal mask with SIGTERM blocked (Foundation's Process does not reset it), and a server
    /// that ignores SIGTERM must not hang the whole run in `waitUntilExit`.
    public func stop() {
        Self.kill(process)
    }

    private static func kill(_ process: Process) {
        guard process.isRunning else { return }
        process.terminate()
        let deadline = Date().addingTimeInterval(3)
        while process.isRunning, Date() < deadline {
            usleep(10_000)
        }
        if process.isRunning {
            Foundation.kill(process.processIdentifier, SIGKILL)
        }
        process.waitUntilExit()
    }

    deinit {
        stop()
    }

    /// GETs a URL synchronously with the curl command line (for control endpoints only).
    public func control(_ path: String, method: String = "GET", body: String? = nil) throws -> Data {
        var arguments = ["-sS", "-X", method, baseURL + path]
        if let body {
            arguments += ["-H", "Content-Type: application/json", "--data-binary", body]
        }
        return try Shell.run("/usr/bin/curl", arguments)
    }
}

public enum TestServerError: Error {
    case didNotStart(String)
}

/// Whether tests that need an optional server must fail instead of skip.
public var isCI: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }

public enum Shell {
    /// Runs a command and returns its standard output; throws when it exits non-zero.
    @discardableResult
    public static func run(_ executable: String, _ arguments: [String], input: Data? = nil) throws -> Data {
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

    /// Runs a command to its end: its exit status, standard output and standard error (for
    /// tests of a command's exit code, output and one-line error). `environment` is added to
    /// this process's.
    public static func outcome(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws
        -> (status: Int32, output: String, errors: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        // Both pipes drained at once: a command that fills one while the other is read waits.
        let errorText = UncheckedBox<Data>()
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            errorText.value = errors.fileHandleForReading.readDataToEndOfFile()
            done.signal()
        }
        let out = output.fileHandleForReading.readDataToEndOfFile()
        done.wait()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: errorText.value ?? Data(), as: UTF8.self))
    }

    /// The rows `sql` gives in the SQLite file `database`, one line each as the sqlite3 shell
    /// prints them (`a|b`): the replica as any other program reads it.
    public static func sqlite(_ database: String, _ sql: String) throws -> [String] {
        String(decoding: try run("/usr/bin/sqlite3", [database, sql]), as: UTF8.self).split(separator: "\n").map(String.init)
    }

    /// Runs `arguments` through /usr/bin/env, output discarded: whether it exited 0.
    public static func succeeds(_ arguments: [String]) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }

    /// A port nobody listens on right now, asked of the kernel (bind to port 0).
    public static func freePort() throws -> Int {
        let output = try run("/usr/bin/env", ["python3", "-c", "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"])
        guard let port = Int(String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw TestServerError.didNotStart("no free port")
        }
        return port
    }
}

/// A value one thread writes and another reads after a semaphore says it is there.
private final class UncheckedBox<Value>: @unchecked Sendable {
    var value: Value?
}

public enum ShellError: Error {
    case failed(String)
}
