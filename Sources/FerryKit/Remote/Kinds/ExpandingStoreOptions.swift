/// Options of a kind whose store stands for several: a CardDAV/CalDAV account, whose address
/// books and calendars each sync as a store of their own.
///
/// The store's own pass finds its members and records them in the replica
/// (``ExpandedMember``, with the member's store name and what it was found as); ferryd and
/// `ferry sync` then run each recorded member as a store (``FerryConfiguration/expandingMembers(_:)``),
/// from the start, before the next pass of the expanding store. A kind adds this conformance
/// and nothing outside its folder: the pass factory (``PassOrder``) makes its pass, and
/// ferryd's ``StoreExpansion`` and `ferry sync` ask only this protocol.
public protocol ExpandingStoreOptions: StoreOptions {
    /// The store `member`, recorded by a pass of `store`, syncs as.
    func memberStore(of store: StoreConfiguration, _ member: ExpandedMember) -> StoreConfiguration
    /// The operation of a pass of the expanding store itself: finding its members. Its report
    /// carries each member's sync token as it listed it (``PassReport/collectionTokens``).
    func makeExpansionPass(_ order: PassOrder) -> any PassOperation
}

extension AnyStoreOptions {
    /// The options as an expanding kind's, or nil for a kind that syncs a table of its own.
    public var expanding: (any ExpandingStoreOptions)? { value as? any ExpandingStoreOptions }
}

extension StoreConfiguration {
    /// Whether this store expands into member stores (``ExpandingStoreOptions``).
    public var expands: Bool { options.expanding != nil }
}
