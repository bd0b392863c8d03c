import ArgumentParser
import FerryKit
import Foundation

struct ChangesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "changes",
        abstract: "Print the local change log as JSON lines, so scripts can react to what changed.",
        discussion: #"Each line: {"id":"…","operation":"insert|update|delete","origin":"remote|local","sequence":N,"store":"…","time":"…"}; origin local is a local write the remote accepted (pushed). Pass the last sequence you saw to --since."#)

    @OptionGroup var options: ConfigurationOptions

    // Taken whatever it looks like, so `--since -5` is explained rather than "missing value".
    @Option(parsing: .unconditional, help: "Print changes after this sequence number (0 or more: the last \"sequence\" you saw).")
    var since: Int64 = 0

    @Flag(help: "Keep waiting for new changes.")
    var follow = false

    @Option(help: "Only changes of this store.", completion: storeNames)
    var store: String?

    func validate() throws {
        guard since >= 0 else {
            throw ValidationError("--since takes a change's sequence number, 0 or more (got \(since)): pass the last \"sequence\" you saw, or 0 for every change kept")
        }
    }

    func run() throws {
        let path: String
        let configuration = try? options.load(secrets: .referencesOnly)
        if let database = options.database {
            path = database
        } else {
            do { path = try options.load(secrets: .referencesOnly).global.databasePath } catch { throw fail(error) }
        }
        do {
            if let problem = ReplicaAccessError.check(readable: path) { throw problem }
            let database = try ReplicaDatabase.openReadOnly(path: path)
            defer { database.close() }
            // A store no longer configured still has its log; a name neither knows is a typo.
            if let store, configuration?.store(named: store) == nil, try !database.storeNames().contains(store) {
                let known = Set((configuration?.stores.map(\.name) ?? []) + (try database.storeNames())).sorted()
                FileHandle.standardError.write(Data("ferry: no store named '\(store)' (stores: \(known.joined(separator: ", ")))\n".utf8))
                throw ExitCode(FerryExitCode.usage.rawValue)
            }
            let encoder = StoreStatus.makeEncoder()
            var after = since
            while true {
                let entries = try database.changes(after: after, limit: 10_000)
                for entry in entries where store == nil || entry.store == store {
                    print(String(decoding: try encoder.encode(entry), as: UTF8.self))
                }
                after = entries.last?.sequence ?? after
                if entries.count == 10_000 { continue }
                guard follow else { break }
                fflush(nil)  // flushes stdout too; `stdout` itself is a global var Swift 6 refuses
                Thread.sleep(forTimeInterval: 1)
            }
        } catch let exit as ExitCode {
            throw exit
        } catch {
            throw fail(error)
        }
    }
}
