import ArgumentParser
import FerryKit

struct PushCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push",
        abstract: "Push stores' local writes to their remotes now, without pulling.",
        discussion: """
        Sends what programs wrote to push stores' tables (push = yes) and is queued in ferry_outbox. \
        Exits 0 when every local write was pushed, 2 while one stays unpushed (held in a conflict: \
        ferry conflicts; refused by the remote: ferry status says why; or still queued: written meanwhile, \
        or a create whose fate a crash left in doubt). When the push itself failed, the writes stay queued \
        and the exit code says why, as for ferry sync: 69 the remote unavailable or answering wrongly, \
        77 credentials refused, 74 the replica, 75 another process syncing the store for over 60 s.
        """)

    @OptionGroup var options: ConfigurationOptions

    @Argument(help: "Stores to push (default: every store with push = yes).", completion: storeNames)
    var stores: [String] = []

    @Flag(name: .shortAndLong, help: "Log every pass event, even on a terminal.")
    var verbose = false

    func run() throws {
        try runOneShot(options, stores: stores, verbose: verbose, pushOnly: true)
    }
}
