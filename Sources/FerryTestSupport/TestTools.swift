import FerryKit
import Foundation
import Logging

/// Where the pip-installed test servers live: `$FERRY_VENV/bin` (scripts/test.sh sets it and
/// installs them there), else `$PATH`.
public enum TestTools {
    public static func executable(_ name: String) -> String? {
        let environment = ProcessInfo.processInfo.environment
        var directories: [String] = []
        if let venv = environment["FERRY_VENV"] { directories.append(venv + "/bin") }
        directories += (environment["PATH"] ?? "").split(separator: ":").map(String.init)
        return directories.map { $0 + "/" + name }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}

/// A store built from configuration lines, through the loader a real `ferry.conf` goes
/// through, so tests exercise the same option parsing and validation as ferryd.
///
///     let store = try configuredStore(kind: "json", url: url, ["pagination": "link"])
public func configuredStore(name: String = "items", kind: String, url: String, _ keys: [String: String] = [:],
                            environment: [String: String] = [:]) throws -> StoreConfiguration {
    let lines = ["[store \(name)]", "kind = \(kind)", "url = \(url)"] + keys.sorted { $0.key < $1.key }.map { "\($0.key) = \($0.value)" }
    let configuration = try ConfigurationLoader.parse(text: lines.joined(separator: "\n"), file: "/test/ferry.conf", environment: environment)
    return configuration.stores[0]
}

/// The source a pass of `store` would run, made as the pass makes it.
public func makeSource(for store: StoreConfiguration) throws(SyncError) -> any RemoteSource {
    try store.options.value.makeSource(RemoteSourceContext(store: store, logger: Logger(label: "ferry.test.\(store.name)")))
}

/// A fresh directory under /tmp, removed at deinit.
public final class TemporaryDirectory {
    public let url: URL

    public init(_ prefix: String = "ferry-test") throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    public var path: String { url.path }

    public func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    deinit { try? FileManager.default.removeItem(at: url) }
}

/// A seeded random generator (SplitMix64), so a failing test and a benchmark's data replay
/// exactly.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed &+ 0x9E37_79B9_7F4A_7C15 }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
