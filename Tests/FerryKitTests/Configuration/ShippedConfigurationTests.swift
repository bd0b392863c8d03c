import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// The shipped `etc/ferry/ferry.conf` is the reference `ferry.conf(5)` is made from: every key
/// the loader takes, in `[ferry]` or a store of any kind, is documented there.
@Suite struct ShippedConfigurationTests {
    /// Every word of the file that could be a key: `key = ...` lines, commented-out defaults
    /// and the tables that describe a kind's keys (`#   key   what it does`) alike.
    static func documentedKeys() throws -> Set<String> {
        let text = try String(contentsOf: TestServer.repositoryRoot.appendingPathComponent("etc/ferry/ferry.conf"), encoding: .utf8)
        let wordCharacters = CharacterSet.lowercaseLetters.union(.decimalDigits).union(CharacterSet(charactersIn: "-."))
        return Set(text.components(separatedBy: wordCharacters.inverted).map { $0.trimmingCharacters(in: CharacterSet(charactersIn: ".")) })
    }

    @Test func everyKeyIsDocumented() throws {
        let documented = try Self.documentedKeys()
        // The table ferry.conf(5) is generated from (`ferry check-config --list-keys`): every
        // key the reader takes, another spelling of one (lookback) not counted twice.
        let every = Set(ConfigurationKeys.table.map(\.key))
        let kinds = StoreKind.registered.flatMap { $0.optionKeys.union($0.secretKeys) }
        #expect(every.isSuperset(of: ConfigurationLoader.globalKeys.union(StoreSectionReader.commonKeys)
            .union(kinds.filter { StoreOptionReader.canonical($0) == $0 })))
        let missing = every.filter { !documented.contains($0) }.sorted()
        #expect(missing.isEmpty, "keys ferry.conf does not document: \(missing.joined(separator: ", "))")
    }

    /// The shipped file loads as it is (ferryd's first start after installing).
    @Test func theShippedFileLoads() throws {
        let path = TestServer.repositoryRoot.appendingPathComponent("etc/ferry/ferry.conf").path
        let configuration = try ConfigurationLoader.load(path: path, environment: ["STATE_DIRECTORY": "/tmp/ferry-test-state"], secrets: .referencesOnly)
        #expect(!configuration.stores.isEmpty)
    }
}
