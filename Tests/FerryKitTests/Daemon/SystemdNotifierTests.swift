@testable import FerryKit
import FerryTestSupport
import Foundation
import Testing

/// The notifier against a real AF_UNIX datagram socket bound by the test, as systemd binds
/// NOTIFY_SOCKET. Serialized: NOTIFY_SOCKET and WATCHDOG_USEC are process-wide.
@Suite(.serialized) struct SystemdNotifierTests {
    /// A bound datagram socket and the path NOTIFY_SOCKET points at while `body` runs.
    private func withNotifySocket(_ body: (NotifyListener) throws -> Void) throws {
        let listener = try NotifyListener()
        setenv("NOTIFY_SOCKET", listener.path, 1)
        defer {
            unsetenv("NOTIFY_SOCKET")
            listener.close()
        }
        try body(listener)
    }

    @Test func everyNotification_sendsItsExactDatagram() throws {
        try withNotifySocket { (listener: NotifyListener) throws in
            let notifier = SystemdNotifier()
            #expect(notifier.isUnderSystemd)

            notifier.ready()
            #expect(try listener.receive() == "READY=1")

            notifier.ready(status: "2 stores ok")
            #expect(try listener.receive() == "READY=1\nSTATUS=2 stores ok")

            notifier.status("syncing quotes\nREADY=1")
            #expect(try listener.receive() == "STATUS=syncing quotes READY=1")

            notifier.watchdog()
            #expect(try listener.receive() == "WATCHDOG=1")

            notifier.stopping()
            #expect(try listener.receive() == "STOPPING=1")

            notifier.extendTimeout(.seconds(90))
            #expect(try listener.receive() == "EXTEND_TIMEOUT_USEC=90000000")

            notifier.errno(5)
            #expect(try listener.receive() == "ERRNO=5")
        }
    }

    @Test func reloading_carriesTheMonotonicClockInMicroseconds() throws {
        try withNotifySocket { (listener: NotifyListener) throws in
            let before = Systemd.monotonicMicroseconds()
            SystemdNotifier().reloading()
            let after = Systemd.monotonicMicroseconds()
            let lines = try listener.receive().split(separator: "\n")
            #expect(lines.count == 2)
            #expect(lines.first == "RELOADING=1")
            let stamp = try #require(lines.last.flatMap { $0.hasPrefix("MONOTONIC_USEC=") ? UInt64($0.dropFirst(15)) : nil })
            #expect((before...after).contains(stamp))
        }
    }

    @Test func missingSocket_isReportedNotThrown() {
        setenv("NOTIFY_SOCKET", "/nonexistent/ferry-notify.sock", 1)
        defer { unsetenv("NOTIFY_SOCKET") }
        #expect(SystemdNotifier().send(["READY=1"]) == false)
        #expect(throws: SystemdError.noSuchFile) { try Systemd.notify("READY=1") }
    }

    @Test func malformedEnvironment_isAnErrorNotATrap() {
        // sd_notify answers EINVAL for a relative socket path: the environment's fault, not ours.
        setenv("NOTIFY_SOCKET", "relative.sock", 1)
        defer { unsetenv("NOTIFY_SOCKET") }
        #expect(SystemdNotifier().send(["READY=1"]) == false)
        setenv("WATCHDOG_USEC", "soon", 1)
        defer { unsetenv("WATCHDOG_USEC") }
        #expect(SystemdNotifier().watchdogInterval == nil)
    }

    @Test func withoutNotifySocket_nothingIsSent() {
        unsetenv("NOTIFY_SOCKET")
        let notifier = SystemdNotifier()
        #expect(!notifier.isUnderSystemd)
        #expect(notifier.send(["READY=1"]) == false)
    }

    @Test func watchdogInterval_comesFromWatchdogUsecForThisProcess() {
        setenv("WATCHDOG_USEC", "5000000", 1)
        setenv("WATCHDOG_PID", "\(getpid())", 1)
        defer {
            unsetenv("WATCHDOG_USEC")
            unsetenv("WATCHDOG_PID")
        }
        let notifier = SystemdNotifier()
        #expect(notifier.watchdogInterval == .seconds(5))
        #expect(notifier.watchdogPingInterval == .milliseconds(2_500))
        // Meant for another process (a child inherited the variables): not ours.
        setenv("WATCHDOG_PID", "\(getpid() + 1)", 1)
        #expect(notifier.watchdogInterval == nil)
        unsetenv("WATCHDOG_USEC")
        unsetenv("WATCHDOG_PID")
        #expect(notifier.watchdogInterval == nil)
    }
}

/// An AF_UNIX SOCK_DGRAM socket bound to a fresh path, like systemd's notify socket.
final class NotifyListener {
    let path: String
    private let fd: Int32

    init() throws {
        // sun_path holds 108 bytes: keep the path short.
        path = "/tmp/ferry-notify-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw NotifyListenerError.system("socket", errno) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else { throw NotifyListenerError.system("bind", errno) }
        // A generous limit: the datagram is sent before receive() is called, so this only
        // matters when nothing was sent (a failure, reported instead of hanging the suite).
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// The next datagram, as text.
    func receive() throws -> String {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(fd, &buffer, buffer.count, 0)
        guard count >= 0 else { throw NotifyListenerError.system("recv", errno) }
        return String(decoding: buffer[..<count], as: UTF8.self)
    }

    func close() {
        Glibc.close(fd)
        unlink(path)
    }
}

enum NotifyListenerError: Error {
    case system(String, Int32)
}
