import Foundation
import Synchronization

/// Serves `GET /metrics` over plain HTTP/1.1 on one listening socket, on a thread of its own,
/// one connection at a time: a scraper asks every few seconds, so nothing more is needed, and
/// a server library would cost more build time than the whole of this file.
///
/// The socket is either opened here (`metrics-listen`) or handed over by systemd (a socket
/// unit, `LISTEN_FDS`), which lets the service keep its sandbox while systemd owns the port.
/// A slow or silent client is cut off after ``ioTimeout``; every answer closes its connection.
/// Rendering happens on this thread (``DaemonMetrics`` takes its own lock), so a scrape never
/// waits for the daemon's main loop, and a wedged main loop shows as metrics that stop moving.
public final class MetricsListener: Sendable {
    private let socket: Int32
    private let render: @Sendable () -> String
    private let stopping = Atomic<Bool>(false)
    /// What the listener is bound to, for logs (`127.0.0.1:9466`, or the inherited socket).
    public let boundTo: String

    /// Seconds a client may take to send its request or read the answer.
    static let ioTimeout = 5
    /// Requests larger than this are refused: a scrape's request is a few hundred bytes.
    static let maxRequestBytes = 8192

    /// Opens a listening socket on `endpoint`.
    public init(endpoint: MetricsEndpoint, render: @escaping @Sendable () -> String) throws(ListenerError) {
        let domain = endpoint.family == .ipv4 ? AF_INET : AF_INET6
        let fd = try Self.call("socket", on: endpoint.description) { Glibc.socket(domain, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
        do {
            var yes: Int32 = 1
            _ = try Self.call("setsockopt(SO_REUSEADDR)", on: endpoint.description) {
                setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
            }
            switch endpoint.family {
            case .ipv4:
                var address = sockaddr_in()
                address.sin_family = sa_family_t(AF_INET)
                address.sin_port = endpoint.port.bigEndian
                _ = inet_pton(AF_INET, endpoint.address, &address.sin_addr)
                try Self.bind(fd, to: address, endpoint)
            case .ipv6:
                var address = sockaddr_in6()
                address.sin6_family = sa_family_t(AF_INET6)
                address.sin6_port = endpoint.port.bigEndian
                _ = inet_pton(AF_INET6, endpoint.address, &address.sin6_addr)
                try Self.bind(fd, to: address, endpoint)
            }
            _ = try Self.call("listen", on: endpoint.description) { listen(fd, 16) }
        } catch {
            close(fd)
            throw error
        }
        socket = fd
        self.render = render
        boundTo = endpoint.description
    }

    /// Takes over a listening socket systemd passed (socket activation).
    public init(inheritedSocket fd: Int32, render: @escaping @Sendable () -> String) {
        socket = fd
        self.render = render
        boundTo = "the socket systemd passed (fd \(fd))"
    }

    /// The socket systemd passed this process, if it passed exactly one (`LISTEN_PID` is this
    /// process and `LISTEN_FDS` is 1: fd 3). The variables are for this process only.
    public static func activatedSocket(environment: [String: String]) -> Int32? {
        guard environment["LISTEN_PID"] == String(getpid()), environment["LISTEN_FDS"] == "1" else { return nil }
        return 3
    }

    /// The port the socket is bound to (for tests that bind port 0).
    public var port: UInt16 {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let found = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        guard found == 0 else { return 0 }
        let family = Int32(storage.ss_family)
        return withUnsafePointer(to: &storage) { pointer in
            switch family {
            case AF_INET: pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
            case AF_INET6: pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) }
            default: 0
            }
        }
    }

    /// Serves on a thread of its own until ``stop()``.
    public func start() {
        let thread = Thread { [self] in serve() }
        thread.name = "ferry-metrics"
        thread.start()
    }

    /// Stops serving within a second; the socket is closed by the serving thread.
    public func stop() {
        stopping.store(true, ordering: .relaxed)
    }

    private func serve() {
        defer { close(socket) }
        var poller = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        while !stopping.load(ordering: .relaxed) {
            // A second's timeout, so ``stop()`` needs no wake-up channel.
            guard poll(&poller, 1, 1000) > 0 else { continue }
            let client = accept(socket, nil, nil)
            guard client >= 0 else { continue }
            answer(client)
            close(client)
        }
    }

    private func answer(_ client: Int32) {
        var timeout = timeval(tv_sec: Self.ioTimeout, tv_usec: 0)
        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard let head = readHead(client) else { return }
        let response = MetricsRequest.respond(to: head, render: render)
        let bytes = Array(response.utf8)
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { buffer in
                send(client, buffer.baseAddress! + offset, buffer.count - offset, Int32(MSG_NOSIGNAL))
            }
            guard sent > 0 else { return }
            offset += sent
        }
    }

    /// The request's head (up to the empty line), or nil when the client went away, was too
    /// slow, or sent too much.
    private func readHead(_ client: Int32) -> String? {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 2048)
        while received.count < Self.maxRequestBytes {
            let count = chunk.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return nil }
            received.append(contentsOf: chunk[0..<count])
            if let end = Self.headEnd(received) { return String(decoding: received[..<end], as: UTF8.self) }
        }
        return nil
    }

    private static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4) where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index
        }
        return nil
    }

    /// `bind` of either address family's `sockaddr_*`.
    private static func bind<Address>(_ fd: Int32, to address: Address, _ endpoint: MetricsEndpoint) throws(ListenerError) {
        var address = address
        _ = try call("bind", on: endpoint.description) {
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<Address>.size)) }
            }
        }
    }

    /// The one place the listener's C calls become typed errors.
    private static func call(_ operation: String, on address: String, _ body: () -> Int32) throws(ListenerError) -> Int32 {
        let result = body()
        guard result >= 0 else { throw ListenerError(operation: operation, address: address, code: errno) }
        return result
    }
}

/// The metrics listener could not be set up: which call, on which address, and the errno.
public struct ListenerError: Error, Sendable, Equatable, CustomStringConvertible {
    public let operation: String
    public let address: String
    public let code: Int32

    public var description: String {
        let hint = code == EADDRINUSE ? " (another process listens there: choose another port in metrics-listen)"
            : code == EADDRNOTAVAIL ? " (no interface of this machine has that address)" : ""
        return "cannot serve metrics on \(address): \(operation): \(String(cString: strerror(code)))\(hint)"
    }
}
