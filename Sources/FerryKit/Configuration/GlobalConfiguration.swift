import Foundation
import Logging

/// The `[ferry]` section: settings of the daemon as a whole, and the transport defaults every
/// store starts from.
public struct GlobalConfiguration: Sendable, Equatable {
    /// Absolute path of the SQLite replica (`database =`).
    public var databasePath: String
    /// Whether `databasePath` is the default for whoever loaded the file (no `database =`).
    public var databaseIsDefault = true
    /// Passes running at the same time across all stores (`max-concurrent-passes =`).
    public var maxConcurrentPasses: Int = 4
    /// Transport defaults (`connect-timeout`, `total-timeout`, `low-speed-limit`,
    /// `low-speed-time`, `max-response-size`, `ca-file`); a store may override each.
    public var session = SessionConfiguration()
    /// Lowest level logged (`log-level =`).
    public var logLevel: Logger.Level = .info
    /// How long rows of the local change log are kept (`keep-changes =`).
    public var changeRetention: Duration = .seconds(30 * 86_400)
    /// A pass that makes no progress for this long stops the watchdog pings, so systemd
    /// restarts a wedged daemon (`stuck-pass-timeout =`).
    public var stuckPassTimeout: Duration = .seconds(600)
    /// Retries after failed passes (`backoff-initial =`, `backoff-max =`,
    /// `backoff-permanent =`).
    public var backoff = Backoff()
    /// Pinged while every store is well, with `/fail` while one is not (`heartbeat-url =`,
    /// `heartbeat-interval =`).
    public var heartbeat: HeartbeatConfiguration?
    /// Where ferryd serves Prometheus metrics (`metrics-listen =`); none when nil, unless
    /// systemd passes a socket (a socket unit).
    public var metricsListen: MetricsEndpoint?
    /// Where ferryd takes change notifications (`notify-listen =`): loopback unless
    /// configured, behind the reverse proxy that faces the APIs. Nil: no store takes any.
    public var notifyListen: MetricsEndpoint?
    /// The URL the APIs are told to call, up to and without `/STORE` (`notify-public-url =`,
    /// e.g. `https://sync.example.com/ferry/notify`): what HubSpot signs, and where Graph and
    /// Google subscriptions point.
    public var notifyPublicURL: String?
    /// Where ferryd keeps its pid file and reload acknowledgements (not configurable: it is
    /// systemd's `RuntimeDirectory=`, so `ferry reload` finds it the same way).
    public var runtimeDirectory: String

    /// `notify-listen` when a store takes notifications and the key is not written.
    public static let defaultNotifyListen = MetricsEndpoint(family: .ipv4, address: "127.0.0.1", port: 9467)

    /// The URL the API calls with `store`'s notifications, when `notify-public-url` is set.
    public func notifyURL(of store: String) -> String? {
        notifyPublicURL.map { ($0.hasSuffix("/") ? String($0.dropLast()) : $0) + "/" + store }
    }

    public init(databasePath: String, runtimeDirectory: String) {
        self.databasePath = databasePath
        self.runtimeDirectory = runtimeDirectory
    }

    /// The database path used when the file has no `database =`:
    /// `$STATE_DIRECTORY/ferry.db` under systemd (`StateDirectory=ferry`); for root, the
    /// service's `/var/lib/ferry/ferry.db` (so `sudo ferry status` reads what ferryd writes);
    /// else `$XDG_STATE_HOME/ferry/ferry.db`, else `~/.local/state/ferry/ferry.db`.
    public static func defaultDatabasePath(environment: [String: String], userID: UInt32 = getuid()) -> String {
        if let state = firstPath(environment["STATE_DIRECTORY"]) {
            return (state as NSString).appendingPathComponent("ferry.db")
        }
        if userID == 0 {
            return "/var/lib/ferry/ferry.db"
        }
        if let xdg = firstPath(environment["XDG_STATE_HOME"]), xdg.hasPrefix("/") {
            return (xdg as NSString).appendingPathComponent("ferry/ferry.db")
        }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return (home as NSString).appendingPathComponent(".local/state/ferry/ferry.db")
    }

    /// `$RUNTIME_DIRECTORY` under systemd (`RuntimeDirectory=ferry`), else `/run/ferry` for
    /// root, else `$XDG_RUNTIME_DIR/ferry` (or `/run/user/UID/ferry`).
    public static func defaultRuntimeDirectory(environment: [String: String], userID: UInt32 = getuid()) -> String {
        if let runtime = firstPath(environment["RUNTIME_DIRECTORY"]) {
            return runtime
        }
        if userID == 0 {
            return "/run/ferry"
        }
        if let xdg = firstPath(environment["XDG_RUNTIME_DIR"]) {
            return (xdg as NSString).appendingPathComponent("ferry")
        }
        return "/run/user/\(userID)/ferry"
    }

    /// systemd passes several directories separated by ':' when a unit lists several; ours is the first.
    private static func firstPath(_ value: String?) -> String? {
        guard let value, let first = value.split(separator: ":").first, !first.isEmpty else { return nil }
        return String(first)
    }
}
