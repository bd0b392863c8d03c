/// The remote-store protocols Ferry speaks. Each kind declares the configuration keys it adds
/// to a store section, so the loader can refuse unknown keys with file, line and key.
public enum StoreKind: String, Sendable, Equatable, CaseIterable {
    /// Parse Server REST: `GET /classes/<Class>`, incremental by updatedAt + objectId.
    case parse
    /// A paginated JSON collection (GitHub-style, Datasette-style, or a file:// page chain).
    case json
    /// CardDAV address book through WebDAV sync-collection (RFC 6578).
    case carddav
    /// CalDAV calendar through WebDAV sync-collection (RFC 6578).
    case caldav

    /// Keys whose value is plain text, specific to this kind.
    public var optionKeys: Set<String> {
        switch self {
        case .parse:
            // application-id: X-Parse-Application-Id; class: the Parse class to sync;
            // lookback: how far before the cursor each incremental pass re-reads.
            ["application-id", "class", "lookback"]
        case .json:
            // records-path: JSON path of the record array ("" = the top-level array);
            // id-field / version-field: JSON paths inside a record;
            // pagination: link | next-url:<path> | cursor:<param>=<path> | none;
            // updated-param: query parameter filtering on "updated after" (incremental);
            // page-size-param: query parameter carrying the page size;
            // header.<Name>: an extra request header.
            ["records-path", "id-field", "version-field", "pagination", "updated-param", "page-size-param", "total-path"]
        case .carddav, .caldav:
            // multiget-batch: hrefs per addressbook-multiget / calendar-multiget REPORT.
            ["multiget-batch"]
        }
    }

    /// Keys whose value is a secret reference (`credential:NAME` or `file:/path`).
    public var secretKeys: Set<String> {
        switch self {
        case .parse: ["rest-api-key", "master-key"]
        case .json: ["bearer-token", "password"]
        case .carddav, .caldav: ["password"]
        }
    }

    /// Whether the remote reports deletions itself (DAV sync-collection does; Parse and plain
    /// JSON collections need periodic reconciliation against a full id listing).
    public var reportsDeletions: Bool {
        switch self {
        case .parse, .json: false
        case .carddav, .caldav: true
        }
    }

    /// How record versions compare (see ``VersionComparison``).
    public var versionComparison: VersionComparison {
        switch self {
        case .parse, .json: .ordered
        case .carddav, .caldav: .opaque
        }
    }
}
