import Foundation

/// What discovery found for a CardDAV/CalDAV account: its principal, its home sets and every
/// address book and calendar in them.
public struct DAVAccount: Sendable, Equatable {
    /// The URL discovery started from and the one that answered it (after the well-known URL
    /// and redirects).
    public var startURL: String
    public var contextURL: String
    /// The current user's principal; nil when the start URL was a collection itself.
    public var principalURL: String?
    /// Home sets by content, in the order the principal named them.
    public var addressBookHomes: [String] = []
    public var calendarHomes: [String] = []
    /// Every collection found, in the order the home sets listed them.
    public var collections: [DiscoveredCollection] = []
    /// Members of a home set that cannot be synced as they are, with the reason (a collection
    /// that claims to be both an address book and a calendar).
    public var unusable: [UnusableCollection] = []
    /// Whether the start URL named a collection (no principal or home set was looked up).
    public var startedAtCollection = false

    public init(startURL: String, contextURL: String) {
        self.startURL = startURL
        self.contextURL = contextURL
    }
}

/// A member of a home set that looks like a collection Ferry syncs but cannot be synced.
public struct UnusableCollection: Sendable, Equatable {
    public var url: String
    public var reason: String
}

/// One address book or calendar of an account, with the properties a person chooses it by.
public struct DiscoveredCollection: Sendable, Equatable {
    /// Its absolute URL, with a trailing slash.
    public var url: String
    /// The last segment of its path, decoded (`contacts` for `/dav/ferry/contacts/`): unique
    /// within its home set, and what its table name is made from.
    public var segment: String
    public var content: WebDAVOptions.Content
    /// `DAV:displayname`, when the server has one.
    public var displayName: String?
    /// Apple's `calendar-color` (`#RRGGBB` or `#RRGGBBAA`), when the server has one.
    public var color: String?
    /// `supported-calendar-component-set` (`VEVENT`, `VTODO`, `VJOURNAL`...); empty for an
    /// address book or a calendar that did not say (RFC 4791 §5.2.3: then any component).
    public var components: [String] = []
    /// Whether `supported-report-set` lists sync-collection; nil when the server did not answer
    /// the property (sync-collection is then tried, and a refusal falls back to PROPFIND).
    public var supportsSyncCollection: Bool?
    /// `DAV:sync-token` (RFC 6578 §4): the token a sync-collection would answer now; nil when the
    /// server did not say.
    public var syncToken: String?

    public init(url: String, segment: String, content: WebDAVOptions.Content) {
        self.url = url
        self.segment = segment
        self.content = content
    }

    /// The kind a single-collection store of it would have.
    public var kind: StoreKind { content == .addressBook ? .carddav : .caldav }
}

/// The steps of discovery, for errors: which request failed, or which answer lacked what.
public enum DiscoveryStep: Sendable, Equatable, CustomStringConvertible {
    /// PROPFIND of `/.well-known/carddav` or `/.well-known/caldav` (RFC 6764 §5).
    case wellKnown
    /// PROPFIND of the start URL or the well-known URL's target for `current-user-principal`.
    case context
    /// PROPFIND of the principal for its home sets (RFC 6352 §7.1.1, RFC 4791 §6.2.1).
    case principal
    /// PROPFIND Depth 1 of a home set, listing its collections.
    case homeSet

    public var description: String {
        switch self {
        case .wellKnown: "discovery: the well-known URL"
        case .context: "discovery: current-user-principal"
        case .principal: "discovery: the principal's home sets"
        case .homeSet: "discovery: the home set's collections"
        }
    }
}
