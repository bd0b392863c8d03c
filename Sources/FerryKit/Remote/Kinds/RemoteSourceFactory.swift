/// Builds the source for a store's kind; the daemon's pass operation calls it on its own thread.
public enum RemoteSourceFactory {
    /// Problems with a store's kind-specific options (missing application-id, a bad pagination
    /// spec...), for the configuration loader to report with the store's location. Empty when usable.
    public static func validateOptions(of store: StoreConfiguration) -> [String] {
        switch store.kind {
        case .parse: ParseSource.validate(store)
        case .json: JSONCollectionSource.validate(store)
        case .carddav, .caldav: []
        }
    }

    /// A new source for one pass. Call on the pass's run-loop thread: the source creates its
    /// session there and delivers every sink call on that loop.
    public static func make(_ context: RemoteSourceContext) throws(SyncError) -> any RemoteSource {
        switch context.store.kind {
        case .parse:
            return try ParseSource(context)
        case .json:
            return try JSONCollectionSource(context)
        case .carddav, .caldav:
            return try WebDAVSource(context)
        }
    }
}
