/// A store's kind-specific settings, parsed and validated when the configuration is loaded,
/// so a pass never reads raw configuration text.
///
/// The value knows its kind, and makes the kind's ``RemoteSource`` for each pass.
public protocol StoreOptions: Sendable {
    /// The kind these options configure.
    var kind: StoreKind { get }
    /// A source for one pass. Called on the pass's run-loop thread: the source creates its
    /// session there and delivers every sink call on that loop.
    func makeSource(_ context: RemoteSourceContext) throws(SyncError) -> any RemoteSource
    /// A writer that pushes queued local changes, for kinds that push (``StoreKind/pushes``).
    /// Called on the pass's run-loop thread, like ``makeSource(_:)``.
    func makeWriter(_ context: RemoteSourceContext) throws(SyncError) -> any RemoteWriter
    /// The local operations the store pushes (the others are refused when written): all three
    /// unless the kind's options say otherwise.
    var pushableOperations: Set<LocalOperation> { get }
    /// Why the options cannot push although `push = yes` (nil: they can), for the loader.
    var pushProblem: String? { get }
    /// The secrets the options send: a 401 means they were refused (none: they are missing),
    /// and no error text may contain them, even echoed by a server.
    var credentials: [Secret] { get }
    /// Equality across kinds, so a reload can tell which stores changed.
    func isEqual(to other: any StoreOptions) -> Bool
    /// What of the options selects the records the store holds (a Parse class and `where`, a
    /// calendar's filter), for ``StoreConfiguration/identity``; never a secret.
    var identity: String { get }
    /// Top-level fields of a JSON body that the remote assigns (its id, its timestamps):
    /// dropped when a local body is pushed as a new record (keep-both's copy), so the remote
    /// assigns new ones. None by default.
    var remoteAssignedFields: [String] { get }
    /// How the merge tells a newer version: the kind's, unless these options make versions
    /// that have no order (a JSON store's digests).
    var versionComparison: VersionComparison { get }
}

extension StoreOptions {
    public var pushableOperations: Set<LocalOperation> { [.create, .update, .delete] }
    public var pushProblem: String? { nil }
    public var identity: String { "" }
    public var remoteAssignedFields: [String] { [] }
    public var versionComparison: VersionComparison { kind.versionComparison }

    public func makeWriter(_ context: RemoteSourceContext) throws(SyncError) -> any RemoteWriter {
        // Configuration refuses `push = yes` for a kind that does not push.
        preconditionFailure("store \(context.store.name): kind \(kind.name) has no writer")
    }
}

extension StoreOptions where Self: Equatable {
    public func isEqual(to other: any StoreOptions) -> Bool {
        (other as? Self) == self
    }
}

/// A store's options of whatever kind, comparable (``StoreConfiguration`` stays `Equatable`).
public struct AnyStoreOptions: Sendable, Equatable {
    public let value: any StoreOptions

    public init(_ value: any StoreOptions) {
        self.value = value
    }

    public var kind: StoreKind { value.kind }

    /// The options as one kind's type, or nil for another kind.
    public func `as`<Options: StoreOptions>(_ type: Options.Type) -> Options? {
        value as? Options
    }

    public static func == (lhs: AnyStoreOptions, rhs: AnyStoreOptions) -> Bool {
        lhs.value.isEqual(to: rhs.value)
    }
}
