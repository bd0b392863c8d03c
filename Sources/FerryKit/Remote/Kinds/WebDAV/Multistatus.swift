import Foundation

/// A parsed WebDAV `DAV:multistatus` (RFC 4918 §14.16) or `DAV:error` (§16) body: only what a
/// sync-collection, multiget or PROPFIND pass needs.
public struct Multistatus: Sendable, Equatable {
    /// One `DAV:response`.
    public struct Response: Sendable, Equatable {
        /// The `DAV:href` values as sent (usually one; RFC 4918 allows several with one status).
        public var hrefs: [String] = []
        /// The response-level `DAV:status` (a 404 member in a sync report), if any.
        public var status: Int?
        /// The status of the `DAV:propstat` that carried `getetag` / data, or of the first one.
        public var propstatStatus: Int?
        /// `DAV:getetag`, as sent (quotes kept).
        public var etag: String?
        /// `CARD:address-data` or `CAL:calendar-data` text.
        public var data: String?
        /// The data text was longer than the parser's limit and was dropped.
        public var dataTooLarge = false
        /// Error conditions inside the response's `DAV:error`, as `namespace + local name`
        /// (`DAV:number-of-matches-within-limits`).
        public var errors: [String] = []
        /// 0-based index of this response in the multistatus, for errors and problems.
        public var position: Int = 0
        /// The children of `DAV:resourcetype` (`DAV:collection`, `urn:...:carddav` +
        /// `addressbook`...), when a 2xx propstat carried it; nil when it was not asked for.
        public var resourceTypes: [String]?

        public init(position: Int = 0) {
            self.position = position
        }

        /// The first href.
        public var href: String { hrefs.first ?? "" }

        /// The status that decides what this response means: the response-level status when
        /// present, otherwise the propstat status.
        public var effectiveStatus: Int? { status ?? propstatStatus }
    }

    /// The root element's local name: `multistatus` or `error`.
    public var root: String = ""
    public var responses: [Response] = []
    /// The `DAV:sync-token`, wherever it appeared (Radicale first, Xandikos last).
    public var syncToken: String?
    /// Conditions of a top-level `DAV:error` body (a 403/412 answer), as `namespace + name`.
    public var errors: [String] = []
    /// What any response said about the whole answer, kept as responses go by: a streamed
    /// multistatus hands its responses over and keeps none (``MultistatusStream``).
    public private(set) var memberErrors: Set<String> = []
    public private(set) var hasInsufficientStorageMember = false

    public init() {}

    /// Records what `response` says about the answer as a whole.
    mutating func noteMember(_ response: Response) {
        memberErrors.formUnion(response.errors)
        if response.effectiveStatus == 507 { hasInsufficientStorageMember = true }
    }

    /// Whether the server said the result is partial (RFC 6578 §3.6: a response with 507 for
    /// the request-URI and `DAV:number-of-matches-within-limits`).
    public var isTruncated: Bool {
        errors.contains(DAVName.numberOfMatchesWithinLimits)
            || memberErrors.contains(DAVName.numberOfMatchesWithinLimits)
            || hasInsufficientStorageMember
    }

    /// Whether the server refused the sync-token (`DAV:valid-sync-token` precondition).
    public var hasInvalidSyncToken: Bool {
        errors.contains(DAVName.validSyncToken) || memberErrors.contains(DAVName.validSyncToken)
    }
}

/// Namespaces and qualified names used by the WebDAV kinds, written `namespace + local name`.
public enum DAVName {
    public static let dav = "DAV:"
    public static let cardDAV = "urn:ietf:params:xml:ns:carddav"
    public static let calDAV = "urn:ietf:params:xml:ns:caldav"
    /// Apple's iCal namespace, for `calendar-color`.
    public static let appleICal = "http://apple.com/ns/ical/"
    public static let validSyncToken = "DAV:valid-sync-token"
    /// RFC 3253 §3.6: the REPORT is not supported on this resource.
    public static let supportedReport = "DAV:supported-report"
    /// Qualified as the parser names elements: the namespace followed by the name.
    public static let supportedFilter = calDAV + "supported-filter"
    public static let numberOfMatchesWithinLimits = "DAV:number-of-matches-within-limits"
    public static let collection = "DAV:collection"
    public static let principal = "DAV:principal"
    public static let addressBook = cardDAV + "addressbook"
    public static let calendar = calDAV + "calendar"
}
