import ArgumentParser
import FerryKit
import Foundation
import Logging

struct DiscoverCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "discover",
        abstract: "Find the address books and calendars of CardDAV/CalDAV accounts, and say what each store would sync.",
        discussion: """
        Starts at each store's url: the server (through /.well-known/carddav and /.well-known/caldav), \
        the user's principal, a home set or a collection; follows current-user-principal and the home sets, \
        and lists every address book and calendar with its name, colour, components and sync support; \
        for a dav-account store, the collections it would sync and their tables (a collection the replica \
        already has keeps its table). Writes nothing. Exits 0 when every store chosen names a collection it can sync, 78 when one does not, \
        and with the failure's code when discovery failed.
        """)

    @OptionGroup var options: ConfigurationOptions

    @Argument(help: "Stores to look at (default: every carddav, caldav and dav-account store).", completion: storeNames)
    var stores: [String] = []

    @Flag(help: "One JSON object per store instead of text.")
    var json = false

    func run() throws {
        let configuration: FerryConfiguration
        do { configuration = try options.load() } catch { throw fail(error) }
        var logger = Logger(label: "ferry.discover")
        logger.logLevel = .warning
        let chosen: [StoreConfiguration]
        do { chosen = try DiscoveryTargets.choose(stores, from: configuration) } catch { throw fail(error) }
        let operations = chosen.compactMap { DiscoveryOperation(store: $0, logger: logger) }
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = configuration.global.maxConcurrentPasses
        queue.addOperations(operations, waitUntilFinished: true)
        // The tables collections already synced keep, when the replica can be read: discovery
        // shows the names a pass would use.
        var known: [ExpandedMember] = []
        let path = options.database ?? configuration.global.databasePath
        if FileManager.default.fileExists(atPath: path), ReplicaAccessError.check(readable: path) == nil,
           let database = try? ReplicaDatabase.openReadOnly(path: path) {
            known = (try? database.expandedMembers()) ?? []
            database.close()
        }
        let knownTables = Dictionary(grouping: known, by: \.expandingStore).mapValues(ExpandedMember.tables(byURL:))
        var worst = FerryExitCode.success
        for operation in operations {
            let result = operation.result ?? operation.cancelledOutcome
            let others = Set(configuration.stores.map(\.name)).subtracting([operation.store.name])
            let report = DiscoveryReport(store: operation.store, result: result, otherStores: others,
                                         knownTables: knownTables[operation.store.name] ?? [:])
            if json {
                let data = try JSONSerialization.data(withJSONObject: report.json, options: [.sortedKeys, .withoutEscapingSlashes])
                print(String(decoding: data, as: UTF8.self))
            } else {
                report.lines.forEach { print($0) }
            }
            if worst == .success { worst = report.exitCode }
        }
        if worst != .success { throw ExitCode(worst.rawValue) }
    }
}
