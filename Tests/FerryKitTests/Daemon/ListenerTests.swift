import Foundation
import Logging
import NIOPosix
import Synchronization
import Testing
@testable import FerryKit
import FerryTestSupport

/// ferryd's HTTP listener: its routes as a table, then the real server on 127.0.0.1 asked by
/// curl and by raw sockets the way an attacker would (too big, too slow, too many, not HTTP).
@Suite("Listener")
struct ListenerTests {
    // MARK: - Routes

    @Test(arguments: [
        ("GET", "/metrics", ListenerRoles.metrics, ListenerRoute.metrics(headOnly: false)),
        ("HEAD", "/metrics", .metrics, .metrics(headOnly: true)),
        ("GET", "/", .notify, .index(headOnly: false)),
        ("POST", "/notify/contacts", .notify, .notify(store: "contacts")),
        ("POST", "/sync/contacts", .control, .sync(store: "contacts")),
        ("POST", "/notify/contacts", [.metrics, .notify], .notify(store: "contacts")),
    ] as [(String, String, ListenerRoles, ListenerRoute)])
    func aRequestGoesWhereItsPathAndTheListenersRolesSay(_ method: String, _ path: String, _ roles: ListenerRoles, _ route: ListenerRoute) {
        #expect(ListenerRoute.decide(method: method, path: path, roles: roles) == route)
    }

    @Test(arguments: [
        ("GET", "/metrics", ListenerRoles.notify, 404),
        ("POST", "/notify/contacts", .metrics, 404),
        ("POST", "/sync/contacts", .notify, 404),
        ("POST", "/notify/Contacts", .notify, 404),
        ("POST", "/notify/contacts/extra", .notify, 404),
        ("POST", "/notify/../metrics", .notify, 404),
        ("POST", "/notify/", .notify, 404),
        ("GET", "/notify/contacts", .notify, 405),
        ("POST", "/metrics", .metrics, 405),
        ("DELETE", "/", .metrics, 405),
    ] as [(String, String, ListenerRoles, Int)])
    func whatNoRouteTakesIsRefused(_ method: String, _ path: String, _ roles: ListenerRoles, _ status: Int) throws {
        guard case .refused(_, let answer) = ListenerRoute.decide(method: method, path: path, roles: roles) else {
            Issue.record("\(method) \(path) was routed")
            return
        }
        #expect(answer.status == status)
        if status == 405 { #expect(answer.extraHeaders["Allow"] != nil) }
    }

    // MARK: - The server

    static let group = MultiThreadedEventLoopGroup.singleton

    static func listener(limits: ListenerLimits = ListenerLimits(), refusals: RefusalCounter = RefusalCounter(),
                         answer: @escaping @Sendable (NotificationRequest) -> ListenerAnswer = { _ in ListenerAnswer(200, "ok\n") }) throws -> HTTPListener {
        try HTTPListener(address: .tcp(MetricsEndpoint(family: .ipv4, address: "127.0.0.1", port: 0)), group: group, limits: limits,
                         onRefusal: { refusals.add($0) }) { request, respond in respond(answer(request)) }
    }

    /// curl's status code and body for `arguments` against the listener.
    static func curl(_ arguments: [String]) throws -> (status: String, body: String) {
        let result = try Shell.outcome("/usr/bin/curl", ["-sS", "--max-time", "10", "-w", "\n%{http_code}"] + arguments)
        let lines = result.output.split(separator: "\n", omittingEmptySubsequences: false)
        return (String(lines.last ?? ""), lines.dropLast().joined(separator: "\n"))
    }

    @Test func theServerAnswersWithTheHandlersAnswer_andClosesTheConnection() throws {
        let seen = Mutex<[NotificationRequest]>([])
        let listener = try Self.listener { request in
            seen.withLock { $0.append(request) }
            return ListenerAnswer(202, "accepted\n")
        }
        defer { listener.stop() }
        let (status, body) = try Self.curl(["-X", "POST", "-H", "X-Test: yes", "--data-binary", "hello", "http://127.0.0.1:\(listener.port)/notify/s?a=b"])
        #expect(status == "202")
        #expect(body == "accepted\n")
        let request = try #require(seen.withLock { $0.first })
        #expect(request.method == "POST")
        #expect(request.path == "/notify/s")
        #expect(request.query == "a=b")
        #expect(request.header("x-test") == "yes")
        #expect(request.body == Array("hello".utf8))
    }

    @Test func aClientThatAsksToContinueGetsToSendItsBody() throws {
        let seen = Mutex<[UInt8]>([])
        let listener = try Self.listener { request in
            seen.withLock { $0 = request.body }
            return ListenerAnswer(202, "accepted\n")
        }
        defer { listener.stop() }
        let body = String(repeating: "x", count: 2000)
        let (status, _) = try Self.curl(["-X", "POST", "-H", "Expect: 100-continue", "--expect100-timeout", "5", "--data-binary", body,
                                         "http://127.0.0.1:\(listener.port)/notify/s"])
        #expect(status == "202")
        #expect(seen.withLock { $0 }.count == 2000)
    }

    @Test func aPortInUseIsATypedError() throws {
        let listener = try Self.listener()
        defer { listener.stop() }
        #expect {
            _ = try HTTPListener(address: .tcp(MetricsEndpoint(family: .ipv4, address: "127.0.0.1", port: UInt16(listener.port))),
                                 group: Self.group) { _, respond in respond(ListenerAnswer(200, "")) }
        } throws: { error in
            (error as? ListenerError)?.code == EADDRINUSE && "\(error)".contains("127.0.0.1:\(listener.port)")
        }
    }

    @Test func aBodyOverTheLimitIsRefusedWith413_announcedOrNot() throws {
        var limits = ListenerLimits()
        limits.maxBodyBytes = 1024
        let refusals = RefusalCounter()
        let handled = Mutex(0)
        let listener = try Self.listener(limits: limits, refusals: refusals) { _ in
            handled.withLock { $0 += 1 }
            return ListenerAnswer(200, "ok\n")
        }
        defer { listener.stop() }
        let big = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-listener-\(UUID().uuidString)").path
        _ = FileManager.default.createFile(atPath: big, contents: Data(repeating: 65, count: 4096))
        defer { try? FileManager.default.removeItem(atPath: big) }
        let url = "http://127.0.0.1:\(listener.port)/notify/s"
        // Content-Length says it; with and without Expect: 100-continue.
        #expect(try Self.curl(["-X", "POST", "--data-binary", "@\(big)", url]).status == "413")
        #expect(try Self.curl(["-X", "POST", "-H", "Expect:", "--data-binary", "@\(big)", url]).status == "413")
        // Chunked: the size shows only as it arrives.
        #expect(try Self.curl(["-X", "POST", "-H", "Transfer-Encoding: chunked", "-H", "Expect:", "--data-binary", "@\(big)", url]).status == "413")
        #expect(handled.withLock { $0 } == 0)
        #expect(refusals.count(.bodyTooLarge) == 3)
        // At the limit it is read.
        #expect(try Self.curl(["-X", "POST", "--data-binary", String(repeating: "a", count: 1024), url]).status == "200")
    }

    @Test func headersOverTheLimitAreRefused() throws {
        var limits = ListenerLimits()
        limits.maxHeaderBytes = 2048
        let listener = try Self.listener(limits: limits)
        defer { listener.stop() }
        let status = try Self.curl(["-H", "X-Big: " + String(repeating: "b", count: 4096), "http://127.0.0.1:\(listener.port)/"]).status
        #expect(status == "431" || status == "400")
        #expect(try Self.curl(["http://127.0.0.1:\(listener.port)/"]).status == "200")
    }

    @Test func whatIsNotHTTPGets400() throws {
        let refusals = RefusalCounter()
        let listener = try Self.listener(refusals: refusals)
        defer { listener.stop() }
        let connection = try RawConnection(port: listener.port)
        connection.send("HELLO THERE\r\n\r\n")
        #expect(connection.readToEnd().hasPrefix("HTTP/1.1 400"))
        #expect(refusals.count(.badRequest) == 1)
    }

    @Test func aRequestNotWholeInTimeIsCutOff() throws {
        var limits = ListenerLimits()
        limits.requestTimeout = .milliseconds(300)
        let refusals = RefusalCounter()
        let listener = try Self.listener(limits: limits, refusals: refusals)
        defer { listener.stop() }
        let connection = try RawConnection(port: listener.port)
        connection.send("POST /notify/s HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
        // The server closes it: the read ends with nothing, not with an answer.
        #expect(connection.readToEnd() == "")
        #expect(refusals.count(.timeout) == 1)
    }

    /// On a group of several event loops, so connections are set up on different threads in
    /// no set order: the ones refused must still be the ones accepted last.
    @Test(arguments: 0..<5)
    func connectionsBeyondTheLimitAreClosedAtOnce(_ round: Int) throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 4)
        defer { try? group.syncShutdownGracefully() }
        var limits = ListenerLimits()
        limits.maxConnections = 3
        let refusals = RefusalCounter()
        let listener = try HTTPListener(address: .tcp(MetricsEndpoint(family: .ipv4, address: "127.0.0.1", port: 0)), group: group,
                                        limits: limits, onRefusal: { refusals.add($0) }) { _, respond in respond(ListenerAnswer(200, "ok\n")) }
        defer { listener.stop() }
        // connect() on loopback returns once the kernel has queued the connection, so these
        // are accepted in this order.
        let connections = try (0..<8).map { _ in try RawConnection(port: listener.port) }
        for connection in connections { connection.send("GET / HTTP/1.1\r\n") }
        for (index, connection) in connections.enumerated().dropFirst(3) {
            connection.send("Host: x\r\n\r\n")
            #expect(connection.readToEnd() == "", "connection \(index + 1) of 8, beyond the limit of 3")
        }
        for (index, connection) in connections.prefix(3).enumerated() {
            connection.send("Host: x\r\n\r\n")
            #expect(connection.readToEnd().hasPrefix("HTTP/1.1 200"), "connection \(index + 1) of 8, within the limit")
        }
        #expect(refusals.count(.tooManyConnections) == 5)
        for connection in connections { connection.close() }
        // Once they are gone, a request is answered again.
        var status = ""
        for _ in 0..<50 where status != "200" {
            status = (try? Self.curl(["http://127.0.0.1:\(listener.port)/"]).status) ?? ""
            if status != "200" { usleep(20_000) }
        }
        #expect(status == "200")
    }

    @Test func aUnixSocketIsTheOwnersOnly() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-listener-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/control.sock"
        let listener = try HTTPListener(address: .unix(path), group: Self.group) { request, respond in respond(ListenerAnswer(200, request.path)) }
        defer { listener.stop() }
        var info = stat()
        #expect(stat(path, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600, "read and write (connecting) for ferryd's user only, under any umask")
        let (status, body) = try Self.curl(["--unix-socket", path, "-X", "POST", "http://ferryd/sync/s"])
        #expect(status == "200")
        #expect(body == "/sync/s")
    }
}

/// Refusals a listener reported, by kind.
final class RefusalCounter: Sendable {
    private let counts = Mutex<[ListenerRefusal: Int]>([:])
    func add(_ refusal: ListenerRefusal) { counts.withLock { $0[refusal, default: 0] += 1 } }
    func count(_ refusal: ListenerRefusal) -> Int { counts.withLock { $0[refusal] ?? 0 } }
}

/// A TCP connection to 127.0.0.1 written byte by byte, as no HTTP client would.
final class RawConnection {
    private let fd: Int32
    private var closed = false

    init(port: Int) throws {
        // Every read bounded, so a test cannot hang on a server that never answers.
        guard let fd = LoopbackSocket.connect(port: port) else { throw ShellError.failed("connect: \(errno)") }
        self.fd = fd
    }

    func send(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Everything until the server closes (or 10 seconds pass).
    func readToEnd() -> String {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            received += chunk[0..<count]
        }
        return String(decoding: received, as: UTF8.self)
    }

    func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(fd)
    }

    deinit { close() }
}
