/// The stores `ferry discover` looks at.
public enum DiscoveryTargets {
    /// The stores named (every carddav, caldav and dav-account store when none is): an unknown name, or a
    /// store of a kind without discovery, is a usage error.
    public static func choose(_ names: [String], from configuration: FerryConfiguration) throws -> [StoreConfiguration] {
        let discoverable = configuration.stores.filter { $0.options.as(WebDAVOptions.self) != nil || $0.options.as(DAVAccountOptions.self) != nil }
        guard !names.isEmpty else {
            guard !discoverable.isEmpty else { throw DiscoveryTargetError.noDAVStores }
            return discoverable
        }
        return try names.map { name in
            guard let store = configuration.stores.first(where: { $0.name == name }) else {
                throw OneShotSyncError.unknownStore(name, known: configuration.stores.map(\.name).joined(separator: ", "))
            }
            guard discoverable.contains(where: { $0.name == name }) else { throw DiscoveryTargetError.notDAV(name, kind: store.kind) }
            return store
        }
    }
}

/// Why `ferry discover` has nothing to look at.
public enum DiscoveryTargetError: Error, CustomStringConvertible {
    case noDAVStores
    case notDAV(String, kind: StoreKind)

    public var description: String {
        switch self {
        case .noDAVStores: "the configuration has no carddav, caldav or dav-account store to discover"
        case .notDAV(let name, let kind): "store \(name) is a \(kind) store; discovery is for carddav, caldav and dav-account stores"
        }
    }
}

extension DiscoveryReport {
    /// `ferry discover`'s exit code for this store: 0 when it syncs something, 78 when as
    /// configured it syncs nothing, else the discovery failure's.
    public var exitCode: FerryExitCode {
        switch verdict {
        case .failed(let error): FerryExitCode.for(error)
        default: isUsable ? .success : .configuration
        }
    }
}
