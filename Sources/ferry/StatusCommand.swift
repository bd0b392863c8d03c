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

    func run() throws {
        // Status works from the database alone when the configuration is unreadable.
        // Status reads the replica only: no secret is needed, none is read.
        let configuration = try? options.load(secrets: .referencesOnly)
        guard let path = options.database ?? configuration?.global.databasePath else {
            do { _ = try options.load(secrets: .referencesOnly) } catch { throw fail(error) }
            return
        }
        let rows: [StoreStatus]
        do {
            if let problem = ReplicaAccessError.check(readable: path) { throw problem }
            let database = try ReplicaDatabase.openReadOnly(path: path)
            defer { database.close() }
            let runtime = runtimeDirectory ?? configuration?.global.runtimeDirectory
                ?? GlobalConfiguration.defaultRuntimeDirectory(environment: options.environment)
            // An account's collections are stores of their own.
            let collections = try database.expandedMembers()
            rows = StoreStatus.collect(configuration: configuration?.expandingMembers(collections), states: try database.syncStates(),
                                       unrecorded: UnrecordedFailures.read(directory: runtime, database: path),
                                       schedule: PublishedSchedule.read(directory: runtime, database: path),
                                       kept: Set(collections.filter { $0.goneSince != nil }.map(\.store)))
        } catch {
            throw fail(error)
        }
        if json {
            let encoder = StoreStatus.makeEncoder()
            for row in rows {
                print(String(decoding: try encoder.encode(row), as: UTF8.self))
            }
        } else {
            print(StoreStatus.table(rows, width: terminalColumns))
        }
        if check, case let code = StoreStatus.checkExitCode(rows), code != .success { throw ExitCode(code.rawValue) }
    }
}
