/// What the replica needs to know about one store: its table name, how deletes and versions
/// work, its typed columns and its bad-record policy. Built from a ``StoreConfiguration``.
public struct StoreDefinition: Sendable, Equatable {
    /// The table name: `[a-z][a-z0-9_]*`, not `ferry_` / `sqlite_` (validated by configuration).
    public var name: String
    public var deletion: DeletionPolicy
    public var comparison: VersionComparison
    public var columns: [TypedColumn]
    /// Nested arrays as read-only views (``ChildTable``).
    public var childTables: [ChildTable] = []
    public var badRecordPolicy: BadRecordPolicy
    public var maxRecordBytes: Int
    /// Local writes: pushed (and checked against ``localBody``) or refused.
    public var writeBack: WriteBackConfiguration
    public var localBody: LocalBodyFormat
    /// What a push store pushes; a local write of another kind is refused when written.
    public var pushableOperations: Set<LocalOperation> = [.create, .update, .delete]
    /// What a local body loses when it is pushed as a new record (``StoreOptions/remoteAssignedFields``).
    public var remoteAssignedFields: [String] = []

    public init(name: String, deletion: DeletionPolicy = .hard, comparison: VersionComparison = .ordered, columns: [TypedColumn] = [], badRecordPolicy: BadRecordPolicy = .skip, maxRecordBytes: Int = 1 << 20,
                writeBack: WriteBackConfiguration = WriteBackConfiguration(), localBody: LocalBodyFormat = .jsonObject) {
        self.name = name
        self.deletion = deletion
        self.comparison = comparison
        self.columns = columns
        self.badRecordPolicy = badRecordPolicy
        self.maxRecordBytes = maxRecordBytes
        self.writeBack = writeBack
        self.localBody = localBody
    }

    public init(_ configuration: StoreConfiguration) {
        self.init(
            name: configuration.name, deletion: configuration.deletion, comparison: configuration.options.value.versionComparison,
            columns: configuration.columns, badRecordPolicy: configuration.badRecordPolicy, maxRecordBytes: configuration.maxRecordBytes,
            writeBack: configuration.writeBack, localBody: configuration.kind.localBody
        )
        childTables = configuration.childTables
        pushableOperations = configuration.options.value.pushableOperations
        remoteAssignedFields = configuration.options.value.remoteAssignedFields
    }
}
