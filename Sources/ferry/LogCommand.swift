import ArgumentParser
import FerryKit
import Foundation

struct LogCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "log",
        abstract: "Show ferryd's journal, optionally for one store (a thin wrapper over journalctl).",
        discussion: """
        Equivalent recipes: journalctl -u ferryd FERRY_STORE=NAME; journalctl -u ferryd MESSAGE_ID=\(MessageID.passFailed.rawValue) (failed passes); \
        journalctl -u ferryd -o json (every field).
        """)

    @Argument(help: "Only entries of this store.", completion: storeNames)
    var store: String?

    @Flag(name: .shortAndLong, help: "Keep printing new entries.")
    var follow = false

    @Flag(help: "Only failed passes.")
    var failures = false

    @Option(name: .shortAndLong, help: "How many recent entries.")
    var lines: Int = 50

    @Option(name: .shortAndLong, help: "The configuration file, to check that the store exists (default: $FERRY_CONFIG, else /etc/ferry/ferry.conf).")
    var config: String?

    @OptionGroup var instance: InstanceOption

    func run() throws {
        let chosen: FerryInstance?
        do { chosen = try instance.chosen() } catch { throw fail(error) }
        let environment = chosen?.environment(ProcessInfo.processInfo.environment) ?? ProcessInfo.processInfo.environment
        let unit = chosen?.unit ?? "ferryd"
        // A store removed from the configuration still has its journal; a name neither the
        // configuration nor the replica knows is a typo.
        if let store, let configuration = try? ConfigurationLoader.load(path: config ?? ConfigurationLoader.defaultPath(environment: environment),
                                                                        environment: environment, secrets: .referencesOnly, storeProblems: .setStoreApart),
           configuration.store(named: store) == nil, !configuration.refusedStores.contains(where: { $0.name == store }) {
            let recorded = (try? ReplicaDatabase.openReadOnly(path: configuration.global.databasePath)).map { database in
                defer { database.close() }
                return (try? database.storeNames()) ?? []
            }
            if let recorded, !recorded.contains(store) {
                let known = Set(configuration.stores.map(\.name) + recorded).sorted()
                FileHandle.standardError.write(Data("ferry: no store named '\(store)' in the configuration or the replica (stores: \(known.joined(separator: ", ")))\n".utf8))
                throw ExitCode(FerryExitCode.usage.rawValue)
            }
        }
        var arguments = ["-u", unit, "--no-pager", "-n", "\(lines)"]
        if let store { arguments.append("FERRY_STORE=\(store)") }
        if failures { arguments.append("MESSAGE_ID=\(MessageID.passFailed.rawValue)") }
        if follow { arguments.append("-f") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/journalctl")
        process.arguments = arguments
        do {
            try process.run()
        } catch {
            FileHandle.standardError.write(Data("ferry: cannot run journalctl (\(error.localizedDescription)); is systemd installed?\n".utf8))
            throw ExitCode(FerryExitCode.failure.rawValue)
        }
        process.waitUntilExit()
        if process.terminationStatus != 0 { throw ExitCode(process.terminationStatus) }
    }
}
