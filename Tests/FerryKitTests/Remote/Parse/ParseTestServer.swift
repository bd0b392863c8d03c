import Foundation
import Logging
import Testing
@testable import FerryKit
import FerryTestSupport

/// parse_server.py for the Parse source tests, plus store configurations pointing at it.
final class ParseTestServer: @unchecked Sendable {
    let server: TestServer

    init(arguments: [String] = []) throws {
        server = try TestServer.python("parse_server.py", arguments: arguments)
    }

    var mount: String { server.baseURL + "/parse" }

    @discardableResult
    func admin(_ path: String, _ body: [String: Any]) throws -> [String: Any] {
        let json = String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
        let data = try server.control("/__admin/" + path, method: "POST", body: json)
        return try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
    }

    func dump(_ className: String = "Quote") throws -> [[String: Any]] {
        let data = try server.control("/__admin/dump?class=" + className)
        let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        return object?["objects"] as? [[String: Any]] ?? []
    }

    func stats() throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: server.control("/__admin/stats")) as? [String: Any] ?? [:]
    }

    /// A Parse store on this server. `lookback` defaults to "0", so the tests of keyset paging see
    /// exactly the changes after the cursor; the lookback tests set it.
    func store(pageSize: Int = 1000, key: String = "rest-secret", className: String = "Quote", lookback: Duration = .zero) -> StoreConfiguration {
        var options = ParseOptions(applicationID: "ferry-test", className: className, key: .restAPI(Secret(key, source: "test")))
        options.pageSize = pageSize
        options.lookback = lookback
        return StoreConfiguration(name: "quotes", url: mount, options: options, location: ConfigurationLocation(file: "test", line: 1))
    }

    func sync(_ store: StoreConfiguration, cursor: String? = nil, reconcile: Bool = false,
              configure: @escaping (CollectingSink, any RemoteSource) -> Void = { _, _ in }) throws -> CollectedPass {
        try SourceRun(store: store, plan: PassPlan(cursor: cursor, reconcile: reconcile), configure: configure).runToCompletion()
    }

    /// Starts the server, or skips (fails in CI) when python3 cannot run it.
    static func start(arguments: [String] = []) throws -> ParseTestServer {
        do {
            return try ParseTestServer(arguments: arguments)
        } catch {
            if isCI { throw error }
            try #require(Bool(false), "parse_server.py could not start: \(error)")
            throw error
        }
    }
}

/// The canonical JSON form of an object, to compare bodies whatever their key order.
func canonicalJSON(_ value: Any) throws -> Data {
    try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys])
}

func canonicalJSON(_ data: Data) throws -> Data {
    try canonicalJSON(try JSONSerialization.jsonObject(with: data))
}
