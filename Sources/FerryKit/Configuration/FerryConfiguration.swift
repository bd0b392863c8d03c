/// A validated configuration: what ``ConfigurationLoader`` returns and ferryd runs on.
///
/// Equatable so a reload can tell which stores were added, removed or changed.
public struct FerryConfiguration: Sendable, Equatable {
    public var global: GlobalConfiguration
    /// In file order; names are unique.
    public var stores: [StoreConfiguration]
    /// What is legal but probably not meant (an empty file, no stores), with file and line:
    /// `ferry check-config` prints them, ferryd logs them at start and on reload.
    public var warnings: [ConfigurationProblem] = []
    /// Stores left out for problems of their own sections, when read with
    /// ``StoreProblemHandling/setStoreApart``; empty otherwise.
    public var refusedStores: [RefusedStore] = []

    public init(global: GlobalConfiguration, stores: [StoreConfiguration], warnings: [ConfigurationProblem] = []) {
        self.global = global
        self.stores = stores
        self.warnings = warnings
    }

    /// The store called `name`, if configured.
    public func store(named name: String) -> StoreConfiguration? {
        stores.first { $0.name == name }
    }
}
