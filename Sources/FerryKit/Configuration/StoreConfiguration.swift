import Foundation

/// Where a configuration value came from, so every error can name file, line and key.
public struct ConfigurationLocation: Sendable, Equatable, CustomStringConvertible {
    public var file: String
    public var line: Int

    public init(file: String, line: Int) {
        self.file = file
        self.line = line
    }

    public var description: String { "\(file):\(line)" }
}

/// A credential. Its value never appears in `description`, logs, status or errors.
public struct Secret: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The secret itself: pass it to the remote, never to a log.
    public let value: String
    /// Where it came from ("credential parse-key", "file /etc/ferry/key"): safe to show.
    public let source: String
    /// The reference it was read through, for checks of who else can read it; nil for a
    /// secret written inline or fetched at run time.
    public let origin: SecretOrigin?

    public init(_ value: String, source: String, origin: SecretOrigin? = nil) {
        self.value = value
        self.source = source
        self.origin = origin
    }

    public var description: String { "<secret from \(source)>" }
    public var debugDescription: String { description }
}

/// The reference a ``Secret`` was read through.
public enum SecretOrigin: Sendable, Equatable {
    /// `credential:NAME`: from `$CREDENTIALS_DIRECTORY` under the unit, else from `path`
    /// (`credentials/NAME` beside the configuration, where the unit's `LoadCredential=` takes it).
    case credential(name: String, path: String)
    /// `file:PATH`.
    case file(path: String)
}

public enum StorePriority: Int, Sendable, Comparable, CaseIterable {
    case low = 0, normal = 1, high = 2

    public static func < (lhs: StorePriority, rhs: StorePriority) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// What a delete does to the local row.
public enum DeletionPolicy: String, Sendable, Equatable {
    /// The row is removed.
    case hard
    /// The row stays with `deleted = 1` (and its last body), so readers can see what went away.
    case tombstone
}

/// What a record that cannot be stored does to the pass.
public enum BadRecordPolicy: String, Sendable, Equatable {
    /// Skip it, count it, log it with store and id/position; the pass goes on.
    case skip
    /// Fail the pass before anything of the page is merged.
    case fail
}

/// A JSON path of the record projected into an indexed column, so `WHERE email = ?` uses an
/// index. For vCard and iCalendar stores the path applies to the extracted fields
/// (`$.EMAIL`, `$.SUMMARY`).
public struct TypedColumn: Sendable, Equatable {
    public enum ColumnType: String, Sendable, Equatable { case text, integer, real }

    public var name: String
    public var type: ColumnType
    /// A SQLite JSON path such as `$.email` or `$.address.city`.
    public var path: String
    public var indexed: Bool

    public init(name: String, type: ColumnType, path: String, indexed: Bool = true) {
        self.name = name
        self.type = type
        self.path = path
        self.indexed = indexed
    }
}

/// One configured remote store, validated: everything a pass and the scheduler need.
public struct StoreConfiguration: Sendable, Equatable {
    /// Also the name of its table in the replica: `[a-z][a-z0-9_]*`, at most 63 characters,
    /// not starting with `ferry_` or `sqlite_`.
    public var name: String
    /// The remote's base URL (file: only where the kind allows it).
    public var url: String
    /// The kind's own settings, parsed and checked at load time; they say which kind this is.
    public var options: AnyStoreOptions
    public var interval: Duration = .seconds(300)
    /// A random delay in 0...jitter added to each scheduled pass, so stores do not align.
    public var jitter: Duration = .seconds(30)
    public var priority: StorePriority = .normal
    public var deletion: DeletionPolicy = .hard
    /// How often a store without delete reporting lists all ids to sweep deleted records;
    /// `nil` never. DAV stores reconcile only after an invalid sync-token.
    public var reconcileInterval: Duration? = .seconds(3600)
    /// A sweep that would delete more than this share of the rows is refused and reported.
    public var maxDeleteShare: Double = 0.5
    public var badRecordPolicy: BadRecordPolicy = .skip
    /// Records larger than this many bytes are bad records.
    public var maxRecordBytes: Int = 1 << 20
    public var columns: [TypedColumn] = []
    /// Nested arrays kept as views a query can join (`table.NAME = PATH`).
    public var childTables: [ChildTable] = []
    /// Extra headers every request of the store carries (`header.NAME =`).
    public var headers = ConfiguredHeaders()
    /// Query parameters every request URL of the store carries (`query.NAME =`).
    public var query = ConfiguredQuery()
    /// Transport limits for this store's requests.
    public var session = SessionConfiguration()
    /// Pinged after this store's passes: the URL when the pass left the replica whole, `/fail`
    /// otherwise (``HeartbeatConfiguration``).
    public var heartbeat: HeartbeatConfiguration?
    /// Whether local writes are pushed, and what a conflict does (`push =`, `conflict =`).
    public var writeBack = WriteBackConfiguration()
    /// Where its requests get OAuth2 access tokens (its `oauth2-*` keys); nil without them.
    public var oauth2: OAuth2Grant?
    /// How the store's change notifications are verified (`notify =` and its keys); nil when
    /// the store takes none and runs on its schedule alone.
    public var notify: NotificationConfiguration?
    /// For a collection of a `dav-account` store: the account's name. Its passes follow the
    /// account's discovery, which reads its sync-token (``Scheduler/accountDiscovered(_:tokens:)``).
    public var account: String?
    /// Where the store's section starts, for errors found after loading.
    public var location: ConfigurationLocation

    public init(name: String, url: String, options: some StoreOptions, location: ConfigurationLocation) {
        self.name = name
        self.url = url
        self.options = AnyStoreOptions(options)
        self.location = location
    }

    /// The remote-store protocol, from the options.
    public var kind: StoreKind { options.kind }

    /// Every secret the store's requests carry: its kind's credentials, configured headers and
    /// query parameters. None of them may appear in an error, a log line, status or a cursor.
    public var secrets: [Secret] { options.value.credentials + headers.secrets + query.secrets + (oauth2?.secrets ?? []) + (notify.map { [$0.secret] } ?? []) }
}
