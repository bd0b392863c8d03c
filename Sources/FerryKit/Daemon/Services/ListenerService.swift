import Foundation
import Logging
import NIOCore
import NIOPosix
import Synchronization

/// ferryd's HTTP listeners on one event-loop thread: metrics (`metrics-listen`, or the socket
/// systemd passed), change notifications (`notify-listen`; one address may serve both), and
/// the control socket in the runtime directory that `ferry sync --now` asks through.
///
/// A notification is verified on the listener's thread (``NotificationDesk``); a verified one
/// asks the daemon's main thread for a pass through `trigger`, and the pass reads the remote
/// as always. Refusals are counted and logged, at most one line per store and reason every
/// ``logGap``, without the body or anything secret.
///
/// An address that cannot be bound stops only what it serves: syncing goes on, and
/// ``problem`` says why until it is served.
final class ListenerService: DaemonService {
    /// Called on the listener's thread with a verified store; posts to the daemon's thread.
    typealias Trigger = @Sendable (_ store: String) -> Void
    /// Called on the listener's thread for `ferry sync --now`; answers when the pass ends.
    typealias PassRequest = @Sendable (_ store: String, _ respond: @escaping @Sendable (ListenerAnswer) -> Void) -> Void

    let desk = NotificationDesk()
    /// Why something configured is not served.
    private(set) var problem: String?
    private var listeners: [HTTPListener] = []
    private var served: (metrics: MetricsEndpoint?, notify: MetricsEndpoint?, control: String?)?
    private let figures: DaemonMetrics
    private let environment: [String: String]
    private let logger: Logger
    private let trigger: Trigger
    private let passRequest: PassRequest
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private let refusalLog = LockedRefusalLog()
    let limits: ListenerLimits
    /// The control socket's path, whatever the configuration says.
    private let controlSocket: String?
    /// The global settings last configured, and whether they are served yet.
    private var global: GlobalConfiguration?
    private var started = false

    /// The least time between two journal lines about refused notifications of one store.
    static let logGap: Duration = .seconds(10)

    init(figures: DaemonMetrics, environment: [String: String], logger: Logger, limits: ListenerLimits = ListenerLimits(),
         controlSocket: String? = nil, trigger: @escaping Trigger, passRequest: @escaping PassRequest) {
        self.figures = figures
        self.controlSocket = controlSocket
        self.environment = environment
        self.logger = logger
        self.limits = limits
        self.trigger = trigger
        self.passRequest = passRequest
    }

    deinit {
        for listener in listeners { listener.stop() }
        try? group.syncShutdownGracefully()
    }

    // MARK: - DaemonService

    /// The stores notifications may name; once started, the addresses as configured now.
    func configure(_ running: FerryConfiguration) {
        desk.configure(running)
        global = running.global
        if started { serve(running.global) }
    }

    func start(_ host: any DaemonServiceHost) {
        started = true
        serve(global ?? host.global)
    }

    /// Closes every listener; nothing more is served.
    func stop() {
        started = false
        unbind()
    }

    private func serve(_ global: GlobalConfiguration) {
        serve(metrics: global.metricsListen, notify: global.notifyListen, control: controlSocket)
    }

    // MARK: - Binding

    /// Serves what the configuration asks for, rebinding only when an address changed.
    func serve(metrics: MetricsEndpoint?, notify: MetricsEndpoint?, control: String?) {
        if let served, served.metrics == metrics, served.notify == notify, served.control == control { return }
        unbind()
        served = (metrics, notify, control)
        var problems: [String] = []
        var bindings: [(HTTPListener.Address, ListenerRoles)] = []
        if let metrics, metrics == notify {
            bindings.append((.tcp(metrics), [.metrics, .notify]))
        } else {
            if let metrics {
                bindings.append((.tcp(metrics), .metrics))
            } else if let socket = Self.activatedSocket(environment: environment) {
                bindings.append((.inherited(socket), .metrics))
            }
            if let notify { bindings.append((.tcp(notify), .notify)) }
        }
        if let control { bindings.append((.unix(control), .control)) }
        for (address, roles) in bindings {
            do {
                let listener = try HTTPListener(address: address, group: group, limits: limits,
                                                onRefusal: { [figures] in figures.listenerRefused($0) },
                                                handler: handler(roles: roles))
                listeners.append(listener)
                logger.info("serving \(Self.describe(roles)) on \(listener.boundTo)")
            } catch {
                problems.append(error.description)
                logger.error("\(error); syncing goes on without \(Self.describe(roles))", metadata: MessageID.metricsUnavailable.metadata)
            }
        }
        problem = problems.isEmpty ? nil : problems.joined(separator: "; ")
    }

    private func unbind() {
        for listener in listeners { listener.stop() }
        listeners = []
        served = nil
    }

    /// The TCP ports bound, for tests that bind port 0.
    var ports: [Int] { listeners.map(\.port) }

    /// The socket systemd passed this process, if it passed exactly one (`LISTEN_PID` is this
    /// process and `LISTEN_FDS` is 1: fd 3). The variables are for this process only.
    static func activatedSocket(environment: [String: String]) -> Int32? {
        guard environment["LISTEN_PID"] == String(getpid()), environment["LISTEN_FDS"] == "1" else { return nil }
        return 3
    }

    private static func describe(_ roles: ListenerRoles) -> String {
        var parts: [String] = []
        if roles.contains(.metrics) { parts.append("Prometheus metrics at /metrics") }
        if roles.contains(.notify) { parts.append("change notifications at /notify/STORE") }
        if roles.contains(.control) { parts.append("pass requests at /sync/STORE") }
        return parts.joined(separator: " and ")
    }

    // MARK: - Requests

    private func handler(roles: ListenerRoles) -> HTTPListener.Handler {
        let figures = self.figures
        let desk = self.desk
        let trigger = self.trigger
        let passRequest = self.passRequest
        let logger = self.logger
        let refusalLog = self.refusalLog
        return { request, respond in
            switch ListenerRoute.decide(method: request.method, path: request.path, roles: roles) {
            case .metrics(let headOnly):
                respond(ListenerAnswer(200, headOnly ? "" : figures.render(), contentType: PrometheusExposition.contentType))
            case .index:
                respond(ListenerAnswer(200, ListenerRoute.index(roles: roles)))
            case .refused(let refusal, let answer):
                figures.listenerRefused(refusal)
                respond(answer)
            case .sync(let store):
                passRequest(store, respond)
            case .notify(let store):
                guard let verdict = desk.verify(request, store: store) else {
                    figures.listenerRefused(.notFound)
                    return respond(ListenerAnswer(404, "not found\n"))
                }
                switch verdict {
                case .trigger:
                    figures.notificationReceived(store, result: "triggered")
                    trigger(store)
                case .handshake:
                    figures.notificationReceived(store, result: "handshake")
                    // A handshake needs no secret (Graph's validationToken is anyone's to send), so
                    // its lines are paced as refusals are.
                    let (log, suppressed) = refusalLog.state.withLock { $0.ask(store: store, reason: "handshake", now: .now, gap: Self.logGap) }
                    if log {
                        let more = suppressed > 0 ? " (and \(suppressed) more since the last line)" : ""
                        logger.info("store \(store): notification handshake answered\(more)", metadata: ["store": "\(store)"])
                    }
                case .refused(let refusal):
                    figures.notificationReceived(store, result: refusal.rawValue)
                    let (log, suppressed) = refusalLog.state.withLock { $0.ask(store: store, reason: refusal.rawValue, now: .now, gap: Self.logGap) }
                    if log {
                        let more = suppressed > 0 ? " (and \(suppressed) more refused since the last line)" : ""
                        // Never the body, a header value or the secret: only what failed.
                        logger.warning("store \(store): notification refused (\(refusal.rawValue.replacingOccurrences(of: "_", with: " ")))\(more)",
                                       metadata: ["store": "\(store)", "refusal": "\(refusal.rawValue)"])
                    }
                }
                respond(NotificationDesk.answer(verdict))
            }
        }
    }
}

/// ``RefusalLog`` shared by the listener's closures.
final class LockedRefusalLog: Sendable {
    let state = Mutex(RefusalLog())
}

/// When a refused notification (or a handshake, which anyone may send) gets a journal line:
/// the first of a store and reason, then at most one per gap with a count of those left out,
/// so a flood of forgeries costs the journal a line every few seconds.
struct RefusalLog {
    private var last: [String: (at: ContinuousClock.Instant, suppressed: Int)] = [:]

    /// - Parameter reason: a refusal's raw value, or `handshake`; never text a request chose.
    mutating func ask(store: String, reason: String, now: ContinuousClock.Instant, gap: Duration) -> (log: Bool, suppressed: Int) {
        let key = store + " " + reason
        if let previous = last[key], now - previous.at < gap {
            last[key] = (previous.at, previous.suppressed + 1)
            return (false, 0)
        }
        let suppressed = last[key]?.suppressed ?? 0
        // Bounded: keys are configured stores times refusals.
        last[key] = (now, 0)
        return (true, suppressed)
    }
}
