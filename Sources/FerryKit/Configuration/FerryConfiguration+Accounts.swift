extension FerryConfiguration {
    /// The configuration with the collections of every `dav-account` store as stores of their
    /// own, as the replica recorded them (``ReplicaDatabase/knownCollections(of:)``): what
    /// ferryd schedules and `ferry status` reports. The account stays too (its pass is
    /// discovery). Collections the account no longer syncs, collections of accounts no longer
    /// configured, and any whose name another store took are left out.
    public func expandingAccounts(_ known: [KnownCollection]) -> FerryConfiguration {
        let accounts = Dictionary(stores.filter(\.kind.isAccount).map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        guard !accounts.isEmpty else { return self }
        var expanded = self
        var names = Set(stores.map(\.name))
        for collection in known where collection.goneSince == nil {
            guard let account = accounts[collection.account], let options = account.options.as(DAVAccountOptions.self),
                  !names.contains(collection.store) else { continue }
            names.insert(collection.store)
            expanded.stores.append(options.collectionStore(of: account, collection.discovered))
        }
        return expanded
    }
}
