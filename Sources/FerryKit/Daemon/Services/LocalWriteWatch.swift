import Logging

/// Finds the push stores another program wrote to since the last look (the replica's
/// `data_version` and outbox), so ferryd pushes within about a second of a local commit
/// instead of at the store's next pass.
final class LocalWriteWatch {
    private let database: SharedDatabase
    private let logger: Logger
    /// The stores with `push = yes`; worked out when what runs changes, not at every look.
    private(set) var pushStores: Set<String> = []

    init(database: SharedDatabase, logger: Logger) {
        self.database = database
        self.logger = logger
    }

    func configure(_ running: FerryConfiguration) {
        pushStores = Set(running.stores.filter(\.writeBack.push).map(\.name))
    }

    /// The push stores written to since the last look (empty when none, or the look failed:
    /// the next pass of each store pushes anyway, and a failing replica shows there).
    func storesWritten() -> Set<String> {
        guard !pushStores.isEmpty else { return [] }
        let pushing = pushStores
        do {
            let stores = try database.writeIfOpen { database throws(StoreError) in try database.storesWithLocalWrites(among: pushing) }
            return (stores ?? nil) ?? []
        } catch {
            logger.warning("looking for local writes failed: \(error)")
            return []
        }
    }
}
