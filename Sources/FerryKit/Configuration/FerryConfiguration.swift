/// A validated configuration: what ``ConfigurationLoader`` returns and ferryd runs on.
///
/// Equatable so a reload can tell which stores were added, removed or changed.
public struct FerryConfiguration: Sendable, Equatable {
    public var global: GlobalConfiguration
    /// In file order; names are unique.
    public var stores: [StoreConfiguration]

    public init(global: GlobalConfiguration, stores: [StoreConfiguration]) {
        self.global = global
        self.stores = stores
    }

    /// The store called `name`, if configured.
    public func store(named name: String) -> StoreConfiguration? {
        stores.first { $0.name == name }
    }
}
