import Logging

/// What ferryd runs of its configuration: every store, and each expanding store's members
/// (a `dav-account`'s collections) as stores of their own, as the replica records them
/// (``FerryConfiguration/expandingMembers(_:)``).
///
/// Members found by earlier passes sync from the start, before their store's next pass runs
/// (or while it fails: the server may be down); a pass of an expanding store that found more
/// or fewer members changes what runs.
final class StoreExpansion {
    private let database: SharedDatabase
    private let logger: Logger
    private(set) var configuration: FerryConfiguration
    private(set) var running: FerryConfiguration
    /// The stores whose passes may find members to add.
    private var expanding: Set<String>

    init(_ configuration: FerryConfiguration, database: SharedDatabase, logger: Logger) {
        self.database = database
        self.logger = logger
        self.configuration = configuration
        expanding = Self.expandingStores(configuration)
        running = configuration
        running = expanded()
    }

    /// A reloaded configuration; returns what runs now.
    @discardableResult
    func load(_ configuration: FerryConfiguration) -> FerryConfiguration {
        self.configuration = configuration
        expanding = Self.expandingStores(configuration)
        running = expanded()
        return running
    }

    /// After `store`'s successful pass: what runs now if its members changed, else nil.
    func passFinished(_ store: String) -> FerryConfiguration? {
        guard expanding.contains(store) else { return nil }
        let before = running
        running = expanded()
        return running != before ? running : nil
    }

    /// Whether `store`'s passes may find members.
    func expands(_ store: String) -> Bool {
        expanding.contains(store)
    }

    private func expanded() -> FerryConfiguration {
        guard !expanding.isEmpty else { return configuration }
        do {
            let known = try database.writeIfOpen { database throws(StoreError) in try database.expandedMembers() } ?? []
            return configuration.expandingMembers(known)
        } catch {
            logger.warning("cannot read the expanding stores' members from the replica: \(error)")
            return configuration.expandingMembers([])
        }
    }

    private static func expandingStores(_ configuration: FerryConfiguration) -> Set<String> {
        Set(configuration.stores.filter(\.expands).map(\.name))
    }
}
