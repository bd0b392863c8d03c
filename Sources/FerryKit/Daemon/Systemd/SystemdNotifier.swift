import Foundation
import Logging

/// Tells systemd what ferryd is doing, through `sd_notify(3)`.
///
///     let notifier = SystemdNotifier(logger: logger)
///     notifier.ready()                       // READY=1: database open, configuration valid
///     notifier.status("3 stores ok, last pass 12s ago")
///
/// Outside systemd (no `NOTIFY_SOCKET`) every call does nothing. A failed send is logged, never
/// thrown: the daemon cannot do anything useful about a notify socket that went away, and must
/// not stop syncing because of it. Safe to call from any thread (`sd_notify` opens its own socket
/// per call).
public final class SystemdNotifier: Sendable {
    private let logger: Logger?

    public init(logger: Logger? = nil) {
        self.logger = logger
    }

    /// Whether systemd is listening (`NOTIFY_SOCKET` is set), i.e. we run as a Type=notify unit.
    public var isUnderSystemd: Bool {
        ProcessInfo.processInfo.environment["NOTIFY_SOCKET"].map { !$0.isEmpty } ?? false
    }

    /// `READY=1`, optionally with a status line in the same datagram.
    public func ready(status: String? = nil) {
        send(["READY=1"] + (status.map { ["STATUS=" + Self.oneLine($0)] } ?? []))
    }

    /// `STATUS=`: the one line `systemctl status` shows.
    public func status(_ text: String) {
        send(["STATUS=" + Self.oneLine(text)])
    }

    /// `WATCHDOG=1`: call only while the daemon is actually making progress.
    public func watchdog() {
        send(["WATCHDOG=1"])
    }

    /// `RELOADING=1` with `MONOTONIC_USEC=` (systemd ≥ 253 needs the timestamp to match the
    /// reload to its READY=1; older ones ignore it). Follow with ``ready(status:)``.
    public func reloading() {
        send(["RELOADING=1", "MONOTONIC_USEC=\(Systemd.monotonicMicroseconds())"])
    }

    /// `STOPPING=1`: shutdown has begun.
    public func stopping() {
        send(["STOPPING=1"])
    }

    /// `EXTEND_TIMEOUT_USEC=`: more time for a long first sync at start or a drain at stop.
    public func extendTimeout(_ duration: Duration) {
        send(["EXTEND_TIMEOUT_USEC=\(Self.microseconds(duration))"])
    }

    /// `ERRNO=`: the reason of a fatal exit, shown by `systemctl status`.
    public func errno(_ code: Int32) {
        send(["ERRNO=\(code)"])
    }

    /// The watchdog timeout systemd set (`WatchdogSec=`), or nil when there is no watchdog.
    /// Ping at half of it (``watchdogPingInterval``), as sd_watchdog_enabled(3) advises.
    public var watchdogInterval: Duration? {
        do {
            return try Systemd.watchdogTimeout()
        } catch {
            logger?.warning("cannot read the watchdog setting", metadata: ["error": "\(error)"])
            return nil
        }
    }

    /// Half of ``watchdogInterval``: how often to send `WATCHDOG=1`.
    public var watchdogPingInterval: Duration? {
        watchdogInterval.map { $0 / 2 }
    }

    /// Sends `assignments` (newline-joined) in one datagram; returns whether systemd got it.
    @discardableResult
    public func send(_ assignments: [String]) -> Bool {
        do {
            return try Systemd.notify(assignments.joined(separator: "\n"))
        } catch {
            logger?.warning("sd_notify failed", metadata: ["error": "\(error)", "notify": "\(assignments.first ?? "")"])
            return false
        }
    }

    /// A newline would start a new assignment: the rest of the text could forge READY=1 or ERRNO=.
    static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline).joined(separator: " ")
    }

    static func microseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return max(0, seconds * 1_000_000 + attoseconds / 1_000_000_000_000)
    }
}
