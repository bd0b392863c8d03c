import Foundation
import Logging
@testable import FerryKit

/// Where the pip-installed test servers live: `$FERRY_VENV/bin` (scripts/test.sh sets it and
/// installs them there), else `$PATH`.
enum TestTools {
    static func executable(_ name: String) -> String? {
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
func configuredStore(name: String = "items", kind: String, url: String, _ keys: [String: String] = [:],
                     environment: [String: String] = [:]) throws -> StoreConfiguration {
    let lines = ["[store \(name)]", "kind = \(kind)", "url = \(url)"] + keys.sorted { $0.key < $1.key }.map { "\($0.key) = \($0.value)" }
    let configuration = try ConfigurationLoader.parse(text: lines.joined(separator: "\n"), file: "/test/ferry.conf", environment: environment)
    return configuration.stores[0]
}

/// The source a pass of `store` would run, made as the pass makes it.
func makeSource(for store: StoreConfiguration) throws(SyncError) -> any RemoteSource {
    try store.options.value.makeSource(RemoteSourceContext(store: store, logger: Logger(label: "ferry.test.\(store.name)")))
}
