import ArgumentParser
import FerryKit
import Foundation
import Logging

struct SyncCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Sync stores once in the foreground, without the daemon.",
        discussion: "Shows progress bars on a terminal and plain log lines when piped. Ctrl-C cancels cleanly: the replica keeps every committed page.")

    @OptionGroup var options: ConfigurationOptions

    @Argument(help: "Stores to sync (default: all).", completion: storeNames)
    var stores: [String] = []

    @Flag(name: .shortAndLong, help: "Log every pass event with its fields (as the journal has them), even on a terminal.")
    var verbose = false

    @Flag(help: "Sweep records deleted on the remote now, even when the store's last sweep is younger than its reconcile-interval.")
    var sweep = false

    @Flag(help: "Ask the running ferryd for a pass of each store now and wait for it, instead of syncing in this process (for scripts and hooks; ferryd's user or root).")
    var now = false

    @Option(help: "With --now: seconds to wait for each pass.")
    var timeout = 600

    func validate() throws {
        if now, stores.isEmpty { throw ValidationError("--now needs the stores to sync, as in ferry sync --now contacts") }
        if now, sweep { throw ValidationError("--sweep syncs in this process; ferryd sweeps on its reconcile-interval") }
    }

    func run() throws {
        if now { return try askDaemon() }
        try runOneShot(options, stores: stores, verbose: verbose) { $0.sweepNow = sweep }
    }

    /// One pass of each store through ferryd's control socket, in turn; the worst exit code.
    private func askDaemon() throws {
        let directory = GlobalConfiguration.defaultRuntimeDirectory(environment: options.environment)
        let socket = PassAnswer.socketPath(runtimeDirectory: directory)
        var worst = FerryExitCode.success
        for store in stores {
            do {
                let answer = try DaemonPassRequest.run(store: store, socketPath: socket, timeout: .seconds(timeout))
                if answer.exitCode == .success || answer.exitCode == .incomplete {
                    print(answer.message)
                } else {
                    FileHandle.standardError.write(Data("ferry: \(answer.message)\n".utf8))
                }
                if worst == .success || (worst == .incomplete && answer.exitCode != .success) { worst = answer.exitCode }
            } catch {
                FileHandle.standardError.write(Data("ferry: \(error)\n".utf8))
                throw ExitCode(error.exitCode.rawValue)
            }
        }
        if worst != .success { throw ExitCode(worst.rawValue) }
    }
}

/// `ferry sync` and `ferry push`: passes of the named stores in the foreground, progress on a
/// terminal, one summary line per store, the exit code of the worst outcome.
func runOneShot(_ options: ConfigurationOptions, stores: [String], verbose: Bool, pushOnly: Bool = false,
                configure: (OneShotSync) -> Void = { _ in }) throws {
    let configuration = try options.loadForWriting()
    // A store whose section has problems is not synced; the others are.
    let refused = configuration.problems(ofStores: stores)
    if let refused { FileHandle.standardError.write(Data("ferry: not synced, for problems in their own sections:\n\(refused)\n".utf8)) }
    let refusedNames = Set(configuration.refusedStores.map(\.name))
    if refused != nil, stores.isEmpty ? configuration.stores.isEmpty : stores.allSatisfy(refusedNames.contains) {
        throw ExitCode(FerryExitCode.configuration.rawValue)
    }
    var stores = stores.filter { !refusedNames.contains($0) }
    if pushOnly {
        let pushing = configuration.stores.filter(\.writeBack.push).map(\.name)
        if let other = stores.first(where: { name in !pushing.contains(name) && configuration.stores.contains { $0.name == name } }) {
            FileHandle.standardError.write(Data("ferry: store \(other.debugDescription) does not push local writes (set push = yes in its section)\n".utf8))
            throw ExitCode(FerryExitCode.usage.rawValue)
        }
        if stores.isEmpty {
            guard !pushing.isEmpty else {
                FileHandle.standardError.write(Data("ferry: no store has push = yes; nothing to push\n".utf8))
                throw ExitCode(FerryExitCode.usage.rawValue)
            }
            stores = pushing
        }
    }
    let interactive = standardErrorIsTerminal && !verbose
    // For people (a terminal, or a pipe a person reads): notices (a wait for a rate limit or
    // for another process syncing the store, a rebuild, a moved collection), warnings and
    // errors as plain lines;
    // each store's summary is printed once, on stdout. --verbose: the configured level with
    // every field, as the journal has them.
    // On a terminal, log lines go above the progress bars, which are then drawn again.
    let display: ProgressDisplay? = interactive ? ProgressDisplay() : nil
    let emit: (@Sendable (String) -> Void)? = display.map { display in { @Sendable line in display.log(line) } }
    let level: Logger.Level = verbose ? configuration.global.logLevel : .notice
    let skipped: Set<String> = verbose ? [] : [MessageID.passFailed.rawValue]
    LoggingSystem.bootstrap { _ in
        StderrLogHandler(level: level, priorityPrefix: false, metadata: verbose, skipping: skipped, emit: emit)
    }
    let logger = Logger(label: "ferry")
    let sync: OneShotSync
    do {
        sync = try OneShotSync(configuration: configuration, storeNames: stores, databasePath: options.database, logger: logger)
        sync.pull = !pushOnly
        configure(sync)
    } catch {
        throw fail(error)
    }
    let results = sync.run { items in
        display?.update(items.map { ProgressLine.render($0) })
    }
    let code = SyncOutcome.worst([SyncOutcome.exitCode(results.map(\.result)), refused == nil ? .success : .configuration])
    for (_, result) in results {
        switch result {
        case .success(let report):
            print(report.summary)
        case .failure(let error):
            FileHandle.standardError.write(Data("ferry: \(error)\n".utf8))
        }
    }
    print("database: \(sync.databasePath)")
    if code != .success { throw ExitCode(code.rawValue) }
}
