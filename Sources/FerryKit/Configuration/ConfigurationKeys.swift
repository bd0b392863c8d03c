/// Every key the configuration reader knows, by where it may be written: what ferry.conf(5) is
/// generated from (`ferry check-config --list-keys`), so the reference lists exactly the keys
/// the reader takes and cannot drift from it.
public enum ConfigurationKeys {
    /// One line per key: where it goes (`[ferry]`, `[store NAME]` for every kind, or
    /// `[store NAME] kind = KIND`), a tab, the key; sections in that order, keys sorted.
    public static var table: [(section: String, key: String)] {
        var rows = ConfigurationLoader.globalKeys.sorted().map { ("[ferry]", $0) }
        rows += StoreSectionReader.commonKeys.union(["kind", "url"]).sorted().map { ("[store NAME]", $0) }
        for kind in StoreKind.registered {
            // Another spelling of a key (``StoreOptionReader/aliases``) is the same entry.
            let own = kind.optionKeys.union(kind.secretKeys).subtracting(StoreSectionReader.commonKeys)
                .filter { StoreOptionReader.canonical($0) == $0 }
            rows += own.sorted().map { ("[store NAME] kind = \(kind.name)", $0) }
        }
        return rows
    }
}
