import ArgumentParser
import FerryKit
import Foundation

struct ConflictsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "conflicts",
        abstract: "List records changed both locally and on the remote, and choose which side wins.",
        discussion: """
        A conflict is recorded with both versions whatever the store's conflict policy; under conflict = hold \
        (the default) the record waits, unpushed, until a resolution is chosen here or in SQL \
        (UPDATE ferry_conflicts SET resolution = 'local' | 'remote' | 'both' WHERE conflict_id = N). \
        ferryd (or the next ferry sync or ferry push) carries the choice out.
        """,
        subcommands: [ListConflicts.self, ResolveConflict.self], defaultSubcommand: ListConflicts.self)
}

struct ListConflicts: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List open conflicts (with --all, resolved ones too).")

    @OptionGroup var options: ConfigurationOptions

    @Option(help: "Only conflicts of this store.", completion: storeNames)
    var store: String?

    @Flag(help: "Also list conflicts a policy or a person resolved.")
    var all = false

    @Flag(help: "JSON lines instead of a table.")
    var json = false

    func run() throws {
        do {
            let path = try databasePath(options)
            if let problem = ReplicaAccessError.check(readable: path) { throw problem }
            let database = try ReplicaDatabase.openReadOnly(path: path)
            defer { database.close() }
            let conflicts = try database.conflicts(of: store, all: all)
            if json {
                let encoder = StoreStatus.makeEncoder()
                for conflict in conflicts { print(String(decoding: try encoder.encode(ConflictLine(conflict)), as: UTF8.self)) }
                return
            }
            if conflicts.isEmpty {
                print(all ? "no conflicts recorded" : "no open conflicts")
                return
            }
            for conflict in conflicts {
                let state = conflict.resolution.map { "resolved: \($0)" + (conflict.resolved == nil ? " (to be carried out)" : "") }
                    ?? "held; resolve with: \(ConflictLine.resolveCommand(conflict.conflictID))"
                print("#\(conflict.conflictID) store \(conflict.store) record \(conflict.id.debugDescription): local \(conflict.localOperation.description), remote \(conflict.remoteBody == nil ? "deleted" : "changed (version \(conflict.remoteVersion ?? "?"))"); \(state)")
            }
        } catch let exit as ExitCode {
            throw exit
        } catch {
            throw fail(error)
        }
    }
}

struct ResolveConflict: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "resolve", abstract: "Choose the side that wins a held conflict.")

    enum Side: String, ExpressibleByArgument, CaseIterable {
        case local, remote, both
    }

    @OptionGroup var options: ConfigurationOptions

    @Argument(help: "The conflict's number (ferry conflicts list).")
    var conflict: Int64

    @Option(help: "local: push the local version over the remote one; remote: take the remote version; both: keep the remote version and push the local one as a new record.")
    var keep: Side

    func run() throws {
        do {
            let path = try options.database ?? options.loadForWriting(secrets: .referencesOnly).global.databasePath
            let database = try ReplicaDatabase(path: path)
            defer { database.close() }
            let resolution: ConflictPlan.Resolution = switch keep {
            case .local: .rebaseLocal
            case .remote: .takeRemote
            case .both: .keepBoth
            }
            guard try database.chooseResolution(resolution, conflict: conflict) else {
                FileHandle.standardError.write(Data("ferry: no open conflict #\(conflict) (ferry conflicts list)\n".utf8))
                throw ExitCode(FerryExitCode.usage.rawValue)
            }
            print("conflict #\(conflict): keeping \(keep.rawValue); carried out by the store's next push (ferryd within seconds, or ferry push)")
        } catch let exit as ExitCode {
            throw exit
        } catch {
            throw fail(error)
        }
    }
}

/// The database a command reads: `--database`, else the configuration's.
func databasePath(_ options: ConfigurationOptions) throws -> String {
    if let database = options.database { return database }
    return try options.load(secrets: .referencesOnly).global.databasePath
}
