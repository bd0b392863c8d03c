/// A scalar value found at a requested path of a page (`next`, `next_url`, a total count).
public enum JSONScalar: Sendable, Equatable {
    case string(String)
    /// A number, as its JSON text.
    case number(String)
    case bool(Bool)
    case null
    /// An object or array where a scalar was expected.
    case composite

    /// The value as text: a string as-is, a number as written; nil for null and composites.
    public var text: String? {
        switch self {
        case .string(let text), .number(let text): text
        case .bool(let value): value ? "true" : "false"
        case .null, .composite: nil
        }
    }
}

/// One record of a scanned page: where its bytes are, and its id and version.
public struct JSONScannedRecord: Sendable, Equatable {
    /// The record object's exact bytes in the page (stored verbatim as the body).
    public var range: Range<Int>
    /// The id, unescaped; nil when the record has a problem that prevents one.
    public var id: String?
    /// The version, unescaped (a number as its text); nil when missing or not requested.
    public var version: String?
    /// Why the record cannot be stored (no id, non-string id, missing version, not an object).
    public var problem: RecordProblem?
    /// The element of the records array that wraps the record, when the layout names a record
    /// inside its elements (``JSONRecordScanner/Layout/recordPath``); nil: the element is the
    /// record.
    public var element: Range<Int>?

    public init(range: Range<Int>, id: String?, version: String?, problem: RecordProblem?, element: Range<Int>? = nil) {
        self.range = range
        self.id = id
        self.version = version
        self.problem = problem
        self.element = element
    }

    /// What the records array holds for the record: its element.
    public var elementRange: Range<Int> { element ?? range }
}

/// What ``JSONRecordScanner`` found in one page.
public struct JSONPage: Sendable, Equatable {
    /// The records in page order (none when scanned for their ``recordCount`` alone).
    public var records: [JSONScannedRecord] = []
    /// How many records the page has, whatever the scan reported of them.
    public var recordCount = 0
    /// Values of the requested field paths that were present, keyed by the path as given.
    public var fields: [String: JSONScalar] = [:]

    public init() {}
}
