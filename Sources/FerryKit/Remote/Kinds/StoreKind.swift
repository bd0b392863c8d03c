/// A remote-store protocol Ferry speaks, as one value: the keys a `[store NAME]` section of
/// this kind may hold, how its records behave in the replica, and how its options are read.
///
/// A kind lives in one folder under `Remote/Kinds/`: it declares itself as a static constant
/// (`StoreKind.parse`), parses its keys into a ``StoreOptions`` value once, when the
/// configuration is loaded (the same code for `ferry check-config`, ferryd's start and its
/// reloads), and that value makes the kind's source for each pass. ``registered`` lists every
/// kind; nothing else in Ferry switches over kinds.
///
///     extension StoreKind {
///         static let example = StoreKind(
///             name: "example", optionKeys: ["collection"], secretKeys: ["token"],
///             reportsDeletions: false, versionComparison: .ordered, fetchesByID: false,
///             localBody: .jsonObject, pushes: false, readOptions: { ExampleOptions(reading: &$0) })
///     }
public struct StoreKind: Sendable, Hashable, CustomStringConvertible {
    /// The `kind =` value.
    public let name: String
    /// Keys whose value is plain text, specific to this kind.
    public let optionKeys: Set<String>
    /// Keys whose value is a secret reference (`credential:NAME` or `file:/path`).
    public let secretKeys: Set<String>
    /// Whether the remote reports deletions itself (DAV sync-collection does); the others need
    /// periodic reconciliation against a full id listing.
    public let reportsDeletions: Bool
    /// How record versions compare (see ``VersionComparison``).
    public let versionComparison: VersionComparison
    /// URL schemes a store of this kind may name.
    public let urlSchemes: Set<String>
    /// Whether the source can fetch given records by id (``PassPlan/pendingIDs``); a kind that
    /// cannot reads everything again to find records an earlier pass could not store.
    public let fetchesByID: Bool
    /// What a local write's body must be (checked by the store table's triggers).
    public let localBody: LocalBodyFormat
    /// Whether the kind pushes local writes (``StoreOptions/makeWriter(_:)``); `push = yes` is
    /// refused at load for a kind that does not.
    public let pushes: Bool
    /// Reads the kind's keys of one section; nil when a problem was reported.
    let readOptions: @Sendable (inout StoreOptionReader) -> (any StoreOptions)?

    init(
        name: String, optionKeys: Set<String>, secretKeys: Set<String>, reportsDeletions: Bool,
        versionComparison: VersionComparison, urlSchemes: Set<String> = ["http", "https"], fetchesByID: Bool,
        localBody: LocalBodyFormat, pushes: Bool,
        readOptions: @escaping @Sendable (inout StoreOptionReader) -> (any StoreOptions)?
    ) {
        self.name = name
        self.optionKeys = optionKeys
        self.secretKeys = secretKeys
        self.reportsDeletions = reportsDeletions
        self.versionComparison = versionComparison
        self.urlSchemes = urlSchemes
        self.fetchesByID = fetchesByID
        self.localBody = localBody
        self.pushes = pushes
        self.readOptions = readOptions
    }

    /// The registered kind called `name`.
    public init?(rawValue name: String) {
        guard let kind = Self.registered.first(where: { $0.name == name }) else { return nil }
        self = kind
    }

    /// The `kind =` value, as for a raw-value enum.
    public var rawValue: String { name }

    public var description: String { name }

    /// Whether `key` is one of this kind's own keys (plain or secret).
    public func knows(_ key: String) -> Bool {
        optionKeys.contains(key) || secretKeys.contains(key)
    }

    // A kind is its name: two values with one name are the same kind.
    public static func == (lhs: StoreKind, rhs: StoreKind) -> Bool { lhs.name == rhs.name }
    public func hash(into hasher: inout Hasher) { hasher.combine(name) }
}
