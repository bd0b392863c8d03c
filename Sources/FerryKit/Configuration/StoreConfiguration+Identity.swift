extension StoreConfiguration {
    /// What the store's rows come from: its kind, URL, the query parameters every request
    /// carries (a secret one by name only) and what its kind says selects records (a Parse
    /// class and `where`, a calendar's filter). When it changes, the rows in the table came
    /// from something else, and the next pass rebuilds the store (``SyncPassOperation``)
    /// instead of going on from a cursor that means nothing there. Credentials, timeouts,
    /// page sizes and columns are not part of it: they do not change what the rows are.
    public var identity: String {
        var parts = [kind.name, url]
        for field in query.items {
            switch field.value {
            case .text(let text): parts.append("query.\(field.name)=\(text)")
            case .secret: parts.append("query.\(field.name)=(secret)")
            }
        }
        let own = options.value.identity
        if !own.isEmpty { parts.append(own) }
        return parts.joined(separator: "\n")
    }
}
