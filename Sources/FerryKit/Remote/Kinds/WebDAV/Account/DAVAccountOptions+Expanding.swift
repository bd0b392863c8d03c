/// A `dav-account` store expands into its address books and calendars: its pass is discovery
/// (``AccountPassOperation``), and each collection discovery recorded syncs as a `carddav` or
/// `caldav` store with the account's settings.
extension DAVAccountOptions: ExpandingStoreOptions {
    public func memberStore(of store: StoreConfiguration, _ member: ExpandedMember) -> StoreConfiguration {
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

extension ExpandedMember {
    /// The collection as discovery would find it again, from what the account recorded of it
    /// (its segment, display name, colour and components, in ``attributes``).
    public var discovered: ChosenCollection {
        var collection = DiscoveredCollection(url: url, segment: attributes["segment"] ?? "", content: kindName == StoreKind.caldav.name ? .calendar : .addressBook)
        collection.displayName = attributes["displayname"]
        collection.color = attributes["color"]
        collection.components = (attributes["components"] ?? "").split(separator: ",").map(String.init)
        return ChosenCollection(collection: collection, table: store)
    }
}

extension ChosenCollection {
    /// The collection as the replica records it for `account`.
    public func member(of account: String) -> ExpandedMember {
        var attributes = ["segment": collection.segment]
        attributes["displayname"] = collection.displayName
        attributes["color"] = collection.color
        if !collection.components.isEmpty { attributes["components"] = collection.components.joined(separator: ",") }
        return ExpandedMember(store: table, expandingStore: account, url: collection.url, kindName: collection.kind.name, attributes: attributes)
    }
}
