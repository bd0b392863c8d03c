/// A `dav-account` store expands into its address books and calendars: its pass is discovery
/// (``AccountPassOperation``), and each collection discovery recorded syncs as a `carddav` or
/// `caldav` store with the account's settings.
extension DAVAccountOptions: ExpandingStoreOptions {
    public func memberStore(of store: StoreConfiguration, _ member: KnownCollection) -> StoreConfiguration {
        collectionStore(of: store, member.discovered)
    }

    public func makeExpansionPass(_ order: PassOrder) -> any PassOperation {
        AccountPassOperation(.init(store: order.store, database: order.database, trigger: order.trigger, pass: order.number,
                                   logger: order.logger, otherStores: order.otherStores))
    }
}

extension AccountPassOperation: ScheduledPass {
    public var lastAdvance: ContinuousClock.Instant { progress.lastAdvance }
    public var isRunning: Bool { isExecuting }
}

extension KnownCollection {
    /// The collection as discovery would find it again.
    public var discovered: ChosenCollection {
        var collection = DiscoveredCollection(url: url, segment: segment, content: kind == .caldav ? .calendar : .addressBook)
        collection.displayName = displayName
        collection.color = color
        collection.components = components
        return ChosenCollection(collection: collection, table: store)
    }
}
