import Foundation

/// A server process the benchmark starts on 127.0.0.1 and always stops again.
///
/// Two kinds: Ferry's Python fault server (prints `PORT n`) and nginx from apt serving a static
/// file from a private prefix directory, unprivileged config, so no system nginx is touched.
final class BenchServer {
    enum Kind: String {
        case python = "fault_server.py"
        case nginx = "nginx"
    }

    let kind: Kind
    let port: Int
    private let process: Process
    private let prefix: URL?

    var baseURL: String { "http://127.0.0.1:\(port)" }

    private init(kind: Kind, port: Int, process: Process, prefix: URL?) {
        self.kind = kind
        self.port = port
        self.process = process
        self.prefix = prefix
    }

    /// Starts `Tests/Servers/fault_server.py` and waits for its `PORT n` line.
    static func python(repositoryRoot: URL) throws -> BenchServer {
        let script = repositoryRoot.appendingPathComponent("Tests/Servers/fault_server.py").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script, "--port", "0"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.standardError
        try process.run()
        var buffer = Data()
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            buffer.append(chunk)
            for line in String(decoding: buffer, as: UTF8.self).split(separator: "\n") where line.hasPrefix("PORT ") {
                if let port = Int(line.dropFirst(5).trimmingCharacters(in: .whitespaces)) {
                    return BenchServer(kind: .python, port: port, process: process, prefix: nil)
                }
            }
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        throw BenchError.serverDidNotStart("fault_server.py printed no PORT line")
    }

    /// Starts nginx (if installed) serving `files` (name → size in bytes) from a fresh prefix
    /// directory; nil when there is no nginx binary.
    static func nginx(files: [String: Int]) throws -> BenchServer? {
        guard let binary = ["/usr/sbin/nginx", "/usr/bin/nginx"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            return nil
        }
        let fileManager = FileManager.default
        let prefix = fileManager.temporaryDirectory.appendingPathComponent("ferry-bench-nginx-\(getpid())")
        try? fileManager.removeItem(at: prefix)
        let root = prefix.appendingPathComponent("www")
        try fileManager.createDirectory(at: root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        try fileManager.setAttributes([.posixPermissions: 0o755], ofItemAtPath: prefix.path)
        for (name, size) in files {
            let path = root.appendingPathComponent(name).path
            guard fileManager.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o644]) else {
                throw BenchError.serverDidNotStart("cannot create \(path)")
            }
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
            let block = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0) })
            var written = 0
            while written < size {
                let piece = min(block.count, size - written)
                try handle.write(contentsOf: block.prefix(piece))
                written += piece
            }
            try handle.close()
        }
        return try nginx(binary: binary, prefix: prefix, root: root, probe: files.keys.first.map { "/\($0)" })
    }

    /// Starts nginx (if installed) serving the existing directory `root` (left in place on
    /// stop); nil when there is no nginx binary. `probe` is a path that must answer before
    /// this returns.
    static func nginx(serving root: URL, probe: String) throws -> BenchServer? {
        guard let binary = ["/usr/sbin/nginx", "/usr/bin/nginx"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            return nil
        }
        let prefix = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-bench-nginx-conf-\(getpid())")
        try? FileManager.default.removeItem(at: prefix)
        try FileManager.default.createDirectory(at: prefix, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        return try nginx(binary: binary, prefix: prefix, root: root, probe: probe)
    }

    private static func nginx(binary: String, prefix: URL, root: URL, probe: String?) throws -> BenchServer {
        // A few attempts: the free port found here could be taken before nginx binds it.
        for _ in 0..<5 {
            let port = try freePort()
            let user = getuid() == 0 ? "user nobody nogroup;" : ""
            let conf = """
            \(user)
            worker_processes 1;
            daemon off;
            pid \(prefix.path)/nginx.pid;
            error_log \(prefix.path)/error.log;
            events { worker_connections 256; }
            http {
                access_log off;
                default_type application/json;
                sendfile on;
                tcp_nodelay on;
                keepalive_requests 1000000;
                client_body_temp_path \(prefix.path)/tmp-body;
                proxy_temp_path \(prefix.path)/tmp-proxy;
                fastcgi_temp_path \(prefix.path)/tmp-fastcgi;
                uwsgi_temp_path \(prefix.path)/tmp-uwsgi;
                scgi_temp_path \(prefix.path)/tmp-scgi;
                server {
                    listen 127.0.0.1:\(port);
                    root \(root.path);
                }
            }
            """
            let confPath = prefix.appendingPathComponent("nginx.conf").path
            try conf.write(toFile: confPath, atomically: true, encoding: .utf8)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: binary)
            process.arguments = ["-p", prefix.path, "-c", confPath, "-e", "\(prefix.path)/error.log"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            let server = BenchServer(kind: .nginx, port: port, process: process, prefix: prefix)
            let deadline = Date().addingTimeInterval(10)
            while Date() < deadline, process.isRunning {
                if let probe, server.answers(path: probe) { return server }
                usleep(50_000)
            }
            server.stop()
        }
        throw BenchError.serverDidNotStart("nginx did not start (see its error.log)")
    }

    private func answers(path: String) -> Bool {
        let probe = Process()
        probe.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        probe.arguments = ["-s", "-f", "-o", "/dev/null", "-r", "0-0", baseURL + path]
        probe.standardOutput = FileHandle.nullDevice
        probe.standardError = FileHandle.nullDevice
        guard (try? probe.run()) != nil else { return false }
        probe.waitUntilExit()
        return probe.terminationStatus == 0
    }

    /// A port nobody listens on right now, asked of the kernel (bind to port 0) via python3.
    private static func freePort() throws -> Int {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard let port = Int(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw BenchError.serverDidNotStart("no free port")
        }
        return port
    }

    /// SIGTERM, then SIGKILL after a grace period: a child may inherit a blocked SIGTERM
    /// (Foundation's Process does not reset the signal mask).
    func stop() {
        if process.isRunning {
            kill(process.processIdentifier, kind == .nginx ? SIGQUIT : SIGTERM)
            let deadline = Date().addingTimeInterval(2)
            while process.isRunning, Date() < deadline {
                usleep(10_000)
            }
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
            }
            process.waitUntilExit()
        }
        if let prefix {
            // nginx workers are children of the master; a killed master leaves them orphaned.
            if let pid = try? String(contentsOfFile: prefix.path + "/nginx.pid", encoding: .utf8),
               let value = Int32(pid.trimmingCharacters(in: .whitespacesAndNewlines)), value == process.processIdentifier {
                kill(value, SIGKILL)
            }
            try? FileManager.default.removeItem(at: prefix)
        }
    }

    deinit {
        stop()
    }
}
