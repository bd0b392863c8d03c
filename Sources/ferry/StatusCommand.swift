import ArgumentParser
import FerryKit
import Foundation

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show each store's state, last success, record count, cursor and last error.",
        discussion: "--json prints one object per line: store, kind, state (ok|incomplete|failing|never-synced|not-configured|gone: a collection a dav-account store no longer syncs, whose rows stay), last_success, last_success_age_seconds, last_attempt, records, cursor, last_error, incomplete, pending_records, local_writes_queued, local_writes_refused, conflicts, next_pass, next_pass_in_seconds, syncing, consecutive_failures, backoff_cause, overdue_seconds (the last six from the running ferryd's schedule; null when none runs). A failure ferryd could not write into the replica (a full or read-only disk), and the schedule, are read from its runtime directory.")

    @OptionGroup var options: ConfigurationOptions

    @Flag(help: "Print JSON lines instead of a table.")
    var json = false

    @Flag(help: "Exit 1 when a store is failing, 2 when one is not ok otherwise (incomplete, never synced, gone), 0 when all are ok (for scripts and monitoring).")
    var check = false

    @Option(help: "ferryd's runtime directory, where it publishes its schedule and failures the replica could not take (default: $RUNTIME_DIRECTORY, else /run/ferry).")
    var runtimeDirectory: String?

    @Argument(help: "Stores to show (default: all).", completion: storeNames)
    var stores: [String] = []

    func run() throws {
        // Status works from the database alone when the configuration is unreadable.
        // Status reads the replica only: no secret is needed, none is read.
        let loaded = Result { try options.load(secrets: .referencesOnly) }
        let configuration = try? loaded.get()
        let runtime = runtimeDirectory ?? configuration?.global.runtimeDirectory
            ?? GlobalConfiguration.defaultRuntimeDirectory(environment: options.environment)
        var refusedFile: (error: any Error, daemon: Int32)?
        var database = options.database ?? configuration?.global.databasePath
        if database == nil, case .failure(let error) = loaded {
            // A refused reload: ferryd runs on its last good configuration, and its published
            // schedule names the replica it keeps.
            guard let running = PublishedSchedule.running(directory: runtime) else { throw fail(error) }
            database = running.database
            refusedFile = (error, running.pid)
        }
        guard let path = database else { return }
        var rows: [StoreStatus]
        do {
            if let problem = ReplicaAccessError.check(readable: path) { throw problem }
            let replica = try ReplicaDatabase.openReadOnly(path: path)
            defer { replica.close() }
            // An account's collections are stores of their own.
            let collections = try replica.expandedMembers()
            rows = StoreStatus.collect(configuration: configuration?.expandingMembers(collections), states: try replica.syncStates(),
                                       unrecorded: UnrecordedFailures.read(directory: runtime, database: path),
                                       schedule: PublishedSchedule.read(directory: runtime, database: path),
                                       kept: Set(collections.filter { $0.goneSince != nil }.map(\.store)))
        } catch {
            throw fail(error)
        }
        if !stores.isEmpty {
            let known = Set(rows.map(\.store))
            if let unknown = stores.first(where: { !known.contains($0) }) {
                FileHandle.standardError.write(Data("ferry: no store named '\(unknown)' (stores: \(rows.map(\.store).joined(separator: ", ")))\n".utf8))
                throw ExitCode(FerryExitCode.usage.rawValue)
            }
            rows = rows.filter { stores.contains($0.store) }
        }
        if json {
            let encoder = StoreStatus.makeEncoder()
            for row in rows {
                print(String(decoding: try encoder.encode(row), as: UTF8.self))
            }
        } else {
            print(StoreStatus.table(rows, width: terminalColumns))
        }
        if let refusedFile {
            FileHandle.standardError.write(Data(("ferry: ferryd (pid \(refusedFile.daemon)) runs on its last good configuration; "
                + "the file on disk is refused, and a reload or restart would fail until it is fixed:\n\(refusedFile.error)\n").utf8))
        }
        if check, case let code = StoreStatus.checkExitCode(rows), code != .success { throw ExitCode(code.rawValue) }
    }
}
