import ArgumentParser
import FerryKit

struct ResyncCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resync",
        abstract: "Rebuild stores from their remotes: read everything again and let go of what the remote no longer has.",
        discussion: """
        For a store whose url, class or filter changed, or whose sweep max-delete-share refused. Readers never see an \
        empty or half-rebuilt table: the rows stay as they are while the remote is read, and then one transaction \
        writes what differs and deletes what the remote lacks, whatever max-delete-share says (you asked). A rebuild \
        that fails changes nothing. The change log records the difference, not a delete-all and insert-all. A dav-account store is discovered \
        again and each of its collections rebuilt. ferryd rebuilds on its own, within max-delete-share, a store whose \
        url, class or filter changed.
        """)

    @OptionGroup var options: ConfigurationOptions

    @Argument(help: "Stores to rebuild.", completion: storeNames)
    var stores: [String]

    @Flag(name: .shortAndLong, help: "Log every pass event, even on a terminal.")
    var verbose = false

    func validate() throws {
        guard !stores.isEmpty else { throw ValidationError("name the stores to rebuild") }
    }

    func run() throws {
        try runOneShot(options, stores: stores, verbose: verbose) { $0.resync = true }
    }
}
