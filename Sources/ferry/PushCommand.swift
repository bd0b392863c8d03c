import ArgumentParser
import FerryKit

struct PushCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push",
        abstract: "Push stores' local writes to their remotes now, without pulling.",
        discussion: """
        Sends what programs wrote to push stores' tables (push = yes) and is queued in ferry_outbox. \
        Exits 0 when everything it tried was pushed, 2 while a change stays unpushed (held in a conflict: \
        ferry conflicts; or refused by the remote: ferry status says why), 1 when the push itself failed.
        """)

    @OptionGroup var options: ConfigurationOptions

    @Argument(help: "Stores to push (default: every store with push = yes).")
    var stores: [String] = []

    @Flag(name: .shortAndLong, help: "Log every pass event, even on a terminal.")
    var verbose = false

    func run() throws {
        try runOneShot(options, stores: stores, verbose: verbose, pushOnly: true)
    }
}
