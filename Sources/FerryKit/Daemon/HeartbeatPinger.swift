import Foundation
import Logging

/// When a heartbeat is pinged, and where: the table ``HeartbeatPinger`` follows.
///
/// | last ping | health now | pings |
/// |---|---|---|
/// | none | any | yes |
/// | healthy, less than `interval` − early ago | healthy | no |
/// | healthy, `interval` − early or more ago | healthy | yes |
/// | healthy | not healthy | yes, at once (`/fail`) |
/// | not healthy | healthy | yes, at once |
/// | not healthy, less than `interval` − early ago | not healthy | no |
/// | not healthy, `interval` − early or more ago | not healthy | yes (`/fail`) |
///
/// `early` (``earliness(_:)``: a tenth of the interval, at most a second) lets a ping the
/// daemon's timer fires for when it is due go out then: a dead-man's switch set to the
/// interval sees a ping at least every interval, not every interval plus a timer's tick.
public enum HeartbeatSchedule {
    public struct Ping: Sendable, Equatable {
        public var at: ContinuousClock.Instant
        public var healthy: Bool

        public init(at: ContinuousClock.Instant, healthy: Bool) {
            self.at = at
            self.healthy = healthy
        }
    }

    public static func pings(healthy: Bool, last: Ping?, now: ContinuousClock.Instant, interval: Duration) -> Bool {
        guard let last else { return true }
        return last.healthy != healthy || now - last.at >= interval - earliness(interval)
    }

    /// How early a ping may go out before its interval is over.
    public static func earliness(_ interval: Duration) -> Duration {
        min(.seconds(1), interval / 10)
    }

    /// When the next ping after `last` is due (nil: at once).
    public static func nextPing(after last: Ping?, interval: Duration) -> ContinuousClock.Instant? {
        last.map { $0.at + interval - earliness(interval) }
    }

    /// The URL a ping goes to: the configured one, or its `/fail` endpoint (healthchecks.io's
    /// convention, followed by its clones).
    public static func url(_ base: String, healthy: Bool) -> String {
        guard !healthy else { return base }
        var components = URLComponents(string: base)
        let path = components?.percentEncodedPath ?? ""
        components?.percentEncodedPath = (path.hasSuffix("/") ? String(path.dropLast()) : path) + "/fail"
        return components?.string ?? base + "/fail"
    }
}

/// Pings heartbeat URLs from the daemon's main thread, never in a pass's way: at most one ping
/// per heartbeat in flight (a slow endpoint skips pings rather than piling them up), short
/// timeouts, and a failed ping is one warning until a ping succeeds again. Only the URL's
/// origin is ever logged.
final class HeartbeatPinger: RemoteSessionDelegate {
    /// Whose heartbeat: the daemon's (every store well) or one store's.
    enum Owner: Hashable, CustomStringConvertible {
        case daemon
        case store(String)

        var description: String {
            switch self {
            case .daemon: "the daemon's heartbeat"
            case .store(let name): "store \(name)'s heartbeat"
            }
        }
    }

    private let logger: Logger
    private var session: RemoteSession!
    private var last: [Owner: HeartbeatSchedule.Ping] = [:]
    private var inFlight: [Int: (owner: Owner, target: String)] = [:]
    private var busy: Set<Owner> = []
    private var failing: Set<Owner> = []

    /// Call on the thread whose run loop delivers the pings' answers.
    init(logger: Logger) {
        self.logger = logger
        var configuration = SessionConfiguration()
        configuration.connectTimeout = 5
        configuration.totalTimeout = 10
        configuration.maxResponseBytes = 64 << 10
        session = RemoteSession(configuration: configuration, delegate: self)
    }

    /// Pings `owner`'s heartbeat if the schedule says so.
    func report(_ owner: Owner, healthy: Bool, to heartbeat: HeartbeatConfiguration, now: ContinuousClock.Instant = .now) {
        guard !heartbeat.url.value.isEmpty, !busy.contains(owner),
              HeartbeatSchedule.pings(healthy: healthy, last: last[owner], now: now, interval: heartbeat.interval) else { return }
        let request = HTTPRequest(url: HeartbeatSchedule.url(heartbeat.url.value, healthy: healthy))
        do {
            let task = try session.start(request)
            inFlight[task.identifier] = (owner, heartbeat.target)
            busy.insert(owner)
            last[owner] = HeartbeatSchedule.Ping(at: now, healthy: healthy)
        } catch {
            warn(owner, target: heartbeat.target, "\(error.kind)")
        }
    }

    /// When `owner`'s next ping is due by its schedule (nil: none sent yet).
    func nextPing(of owner: Owner, interval: Duration) -> ContinuousClock.Instant? {
        HeartbeatSchedule.nextPing(after: last[owner], interval: interval)
    }

    /// Stops pings in flight (the daemon is stopping).
    func cancel() {
        session.cancelAll()
        inFlight.removeAll()
        busy.removeAll()
    }

    // MARK: - RemoteSessionDelegate

    func session(_ session: RemoteSession, task: TransferTask, didReceive head: ResponseHead) {}

    func session(_ session: RemoteSession, task: TransferTask, didReceive data: Data) {}

    func session(_ session: RemoteSession, task: TransferTask, didCompleteWith metrics: TransferMetrics) {
        guard let (owner, target) = inFlight.removeValue(forKey: task.identifier) else { return }
        busy.remove(owner)
        if (200..<300).contains(metrics.status) {
            if failing.remove(owner) != nil {
                logger.notice("\(owner): pings reach \(target) again")
            }
        } else {
            warn(owner, target: target, "HTTP \(metrics.status)")
        }
    }

    func session(_ session: RemoteSession, task: TransferTask, didFailWith error: TransferError) {
        guard let (owner, target) = inFlight.removeValue(forKey: task.identifier) else { return }
        busy.remove(owner)
        warn(owner, target: target, "\(error.kind)")
    }

    private func warn(_ owner: Owner, target: String, _ why: String) {
        guard failing.insert(owner).inserted else { return }
        logger.warning("\(owner): the ping to \(target) failed (\(why)); syncing goes on, and the next ping is due at its interval")
    }
}
