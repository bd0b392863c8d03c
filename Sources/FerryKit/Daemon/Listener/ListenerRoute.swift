/// What a listener serves, by the address it is bound to: `metrics-listen` serves metrics,
/// `notify-listen` notifications (one address may serve both), and the control socket the
/// pass requests of `ferry sync --now`.
public struct ListenerRoles: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    public static let metrics = ListenerRoles(rawValue: 1)
    public static let notify = ListenerRoles(rawValue: 2)
    public static let control = ListenerRoles(rawValue: 4)
}

/// Where a request goes, as a pure function of its method, path and the listener's roles,
/// which its tests read as a table:
///
/// | path             | role    | methods   | route                         |
/// |------------------|---------|-----------|-------------------------------|
/// | `/metrics`       | metrics | GET, HEAD | the exposition                |
/// | `/`              | any     | GET, HEAD | a line saying what is served  |
/// | `/notify/STORE`  | notify  | POST      | the store's notification      |
/// | `/sync/STORE`    | control | POST      | a pass of the store, awaited  |
/// | anything else    |         |           | 404                           |
///
/// A path the listener serves with another method is 405 with `Allow`. A path of another
/// role is 404, so a notification listener says nothing of the metrics or control paths.
public enum ListenerRoute: Sendable, Equatable {
    case metrics(headOnly: Bool)
    case index(headOnly: Bool)
    case notify(store: String)
    case sync(store: String)
    case refused(ListenerRefusal, ListenerAnswer)

    public static func decide(method: String, path: String, roles: ListenerRoles) -> ListenerRoute {
        let read = method == "GET" || method == "HEAD"
        if path == "/metrics", roles.contains(.metrics) {
            return read ? .metrics(headOnly: method == "HEAD") : notAllowed("GET, HEAD")
        }
        if path == "/" {
            return read ? .index(headOnly: method == "HEAD") : notAllowed("GET, HEAD")
        }
        if roles.contains(.notify), let store = storeName(path, under: "/notify/") {
            return method == "POST" ? .notify(store: store) : notAllowed("POST")
        }
        if roles.contains(.control), let store = storeName(path, under: "/sync/") {
            return method == "POST" ? .sync(store: store) : notAllowed("POST")
        }
        return .refused(.notFound, ListenerAnswer(404, "not found\n"))
    }

    /// What `/` says: which paths this listener serves.
    public static func index(roles: ListenerRoles) -> String {
        var served: [String] = []
        if roles.contains(.metrics) { served.append("metrics at /metrics") }
        if roles.contains(.notify) { served.append("change notifications at /notify/STORE") }
        if roles.contains(.control) { served.append("pass requests at /sync/STORE") }
        return "ferryd \(FerryVersion.current): \(served.joined(separator: ", "))\n"
    }

    /// The store named by the one segment after `prefix`, if it can name a store.
    static func storeName(_ path: String, under prefix: String) -> String? {
        guard path.hasPrefix(prefix) else { return nil }
        let name = String(path.dropFirst(prefix.count))
        return StoreSectionReader.problem(withName: name) == nil ? name : nil
    }

    private static func notAllowed(_ allow: String) -> ListenerRoute {
        .refused(.methodNotAllowed, ListenerAnswer(405, "method not allowed\n", extraHeaders: ["Allow": allow]))
    }
}
