import Foundation

/// nginx from apt, serving static files from a private prefix directory with an unprivileged
/// configuration, so no system nginx is touched: the server that is never the bottleneck
/// (`ferry-bench core`, `json-e2e`).
public final class NginxServer: LoopbackServer, @unchecked Sendable {
    /// The first port nginx listens on.
    public var port: Int { ports[0] }
    /// Every port, in the order the configuration's server blocks were given them.
    public let ports: [Int]
    public var name: String { "nginx" }
    private let process: Process
    private let prefix: URL

    private init(ports: [Int], process: Process, prefix: URL) {
        self.ports = ports
        self.process = process
        self.prefix = prefix
    }

    /// Starts nginx (if installed) serving `files` (name → size in bytes) from a fresh prefix
    /// directory; nil when there is no nginx binary.
    public static func start(files: [String: Int]) throws -> NginxServer? {
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
                throw TestServerError.didNotStart("cannot create \(path)")
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
        return try start(binary: binary, prefix: prefix, root: root, probe: files.keys.first.map { "/\($0)" })
    }

    /// Starts nginx (if installed) serving the existing directory `root` (left in place on
    /// stop); nil when there is no nginx binary. `probe` is a path that must answer before
    /// this returns. `locations`: nginx `location` blocks added to the server (a benchmark's
    /// mapping of query parameters to files).
    public static func start(serving root: URL, probe: String, locations: String = "") throws -> NginxServer? {
        guard let binary = ["/usr/sbin/nginx", "/usr/bin/nginx"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            return nil
        }
        let prefix = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-bench-nginx-conf-\(getpid())")
        try? FileManager.default.removeItem(at: prefix)
        try FileManager.default.createDirectory(at: prefix, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        return try start(binary: binary, prefix: prefix, root: root, probe: probe, locations: locations)
    }

    /// Starts nginx (if installed) with the `server { }` blocks `servers` writes for
    /// `portCount` free ports on 127.0.0.1: redirecting fronts, reverse proxies, TLS
    /// terminators (`tls/` beside the test servers holds a certificate). Nil when there is no
    /// nginx binary. `probe` is a path on the first port that must answer, whatever its status,
    /// before this returns.
    public static func start(ports portCount: Int, probe: String, servers: @escaping ([Int]) -> String) throws -> NginxServer? {
        guard let binary = ["/usr/sbin/nginx", "/usr/bin/nginx"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            return nil
        }
        let prefix = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-nginx-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: prefix, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        return try start(binary: binary, prefix: prefix, portCount: portCount, probe: probe, anyStatus: true, servers: servers)
    }

    private static func start(binary: String, prefix: URL, root: URL, probe: String?, locations: String = "") throws -> NginxServer {
        try start(binary: binary, prefix: prefix, portCount: 1, probe: probe, anyStatus: false) { ports in
            """
            server {
                listen 127.0.0.1:\(ports[0]);
                root \(root.path);
            \(locations)
            }
            """
        }
    }

    private static func start(binary: String, prefix: URL, portCount: Int, probe: String?, anyStatus: Bool,
                              servers: ([Int]) -> String) throws -> NginxServer {
        // A few attempts: the free ports found here could be taken before nginx binds them.
        for _ in 0..<5 {
            var ports: [Int] = []
            while ports.count < portCount {
                let port = try Shell.freePort()
                if !ports.contains(port) { ports.append(port) }
            }
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
            \(servers(ports))
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
            let server = NginxServer(ports: ports, process: process, prefix: prefix)
            let deadline = Date().addingTimeInterval(10)
            while Date() < deadline, process.isRunning {
                if let probe, server.answers(path: probe, anyStatus: anyStatus) { return server }
                usleep(50_000)
            }
            server.stop()
        }
        throw TestServerError.didNotStart("nginx did not start (see its error.log)")
    }

    private func answers(path: String, anyStatus: Bool) -> Bool {
        let probe = Process()
        probe.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        probe.arguments = ["-s", "-o", "/dev/null", "-r", "0-0"] + (anyStatus ? [] : ["-f"]) + [baseURL + path]
        probe.standardOutput = FileHandle.nullDevice
        probe.standardError = FileHandle.nullDevice
        guard (try? probe.run()) != nil else { return false }
        probe.waitUntilExit()
        return probe.terminationStatus == 0
    }

    /// SIGQUIT (graceful), then SIGKILL after a grace period; the prefix directory goes.
    public func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGQUIT)
            let deadline = Date().addingTimeInterval(2)
            while process.isRunning, Date() < deadline {
                usleep(10_000)
            }
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
            }
            process.waitUntilExit()
        }
        // nginx workers are children of the master; a killed master leaves them orphaned.
        if let pid = try? String(contentsOfFile: prefix.path + "/nginx.pid", encoding: .utf8),
           let value = Int32(pid.trimmingCharacters(in: .whitespacesAndNewlines)), value == process.processIdentifier {
            kill(value, SIGKILL)
        }
        try? FileManager.default.removeItem(at: prefix)
    }

    deinit {
        stop()
    }
}
