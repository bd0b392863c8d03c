extension FerryConfiguration {
    /// The configuration with the members of every expanding store (a `dav-account` store's
    /// collections) as stores of their own, as the replica recorded them
    /// (``ReplicaDatabase/expandedMembers(of:)``): what ferryd schedules and `ferry status`
    /// reports. The expanding store stays too (its pass finds the members). Members their
    /// store no longer syncs, members of stores no longer configured, members of a kind this
    /// Ferry does not know, and any whose name another store took are left out.
    public func expandingMembers(_ known: [ExpandedMember]) -> FerryConfiguration {
        let expanding = Dictionary(stores.filter(\.expands).map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        guard !expanding.isEmpty else { return self }
        var expanded = self
        var names = Set(stores.map(\.name))
        for member in known where member.goneSince == nil {
            guard let store = expanding[member.expandingStore], let options = store.options.expanding, member.kind != nil,
                  !names.contains(member.store) else { continue }
            names.insert(member.store)
            expanded.stores.append(options.memberStore(of: store, member))
        }
        return expanded
    }
}
