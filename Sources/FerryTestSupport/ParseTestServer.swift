import FerryKit
import Foundation
import Logging

/// parse_server.py for the Parse tests and the push benchmark, plus store configurations
/// pointing at it.
public final class ParseTestServer: @unchecked Sendable {
    public let server: TestServer

    public init(arguments: [String] = []) throws {
        server = try TestServer.python("parse_server.py", arguments: arguments)
    }

    public var mount: String { server.baseURL + "/parse" }

    @discardableResult
    public func admin(_ path: String, _ body: [String: Any]) throws -> [String: Any] {
        let json = String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
        let data = try server.control("/__admin/" + path, method: "POST", body: json)
        return try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
    }

    public func dump(_ className: String = "Quote") throws -> [[String: Any]] {
        let data = try server.control("/__admin/dump?class=" + className)
        let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        return object?["objects"] as? [[String: Any]] ?? []
    }

    public func stats() throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: server.control("/__admin/stats")) as? [String: Any] ?? [:]
    }

    /// A Parse store on this server. `lookback` defaults to "0", so the tests of keyset paging see
    /// exactly the changes after the cursor; the lookback tests set it.
    public func store(pageSize: Int = 1000, key: String = "rest-secret", className: String = "Quote", lookback: Duration = .zero) -> StoreConfiguration {
        var options = ParseOptions(applicationID: "ferry-test", className: className, key: .restAPI(Secret(key, source: "test")))
        options.pageSize = pageSize
        options.lookback = lookback
        return StoreConfiguration(name: "quotes", url: mount, options: options, location: ConfigurationLocation(file: "test", line: 1))
    }

    public func sync(_ store: StoreConfiguration, cursor: String? = nil, reconcile: Bool = false,
              configure: @escaping (CollectingSink, any RemoteSource) -> Void = { _, _ in }) throws -> CollectedPass {
        try SourceRun(store: store, plan: PassPlan(cursor: cursor, reconcile: reconcile), configure: configure).runToCompletion()
    }

    /// Starts the server; a python3 that cannot run it fails the test saying so.
    public static func start(arguments: [String] = []) throws -> ParseTestServer {
        do {
            return try ParseTestServer(arguments: arguments)
        } catch {
            throw TestServerError.didNotStart("parse_server.py could not start: \(error)")
        }
    }
}

/// The canonical JSON form of an object, to compare bodies whatever their key order.
public func canonicalJSON(_ value: Any) throws -> Data {
    try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys])
}

public func canonicalJSON(_ data: Data) throws -> Data {
    try canonicalJSON(try JSONSerialization.jsonObject(with: data))
}
