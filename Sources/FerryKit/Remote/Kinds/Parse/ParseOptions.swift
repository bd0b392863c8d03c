import Foundation

/// A Parse store's settings (`kind = parse`), checked when the configuration is loaded.
public struct ParseOptions: StoreOptions, Equatable {
    /// Which key the requests carry. The master key reads objects regardless of ACLs, which a
    /// full replica wants; the REST API key reads what the class's ACLs allow.
    public enum Key: Sendable, Equatable {
        case master(Secret)
        case restAPI(Secret)
    }

    /// `X-Parse-Application-Id`.
    public var applicationID: String
    /// The class to sync (`GET /classes/<className>`).
    public var className: String
    public var key: Key
    /// How far before the cursor each incremental pass re-reads (see ``ParseSource``).
    public var lookback: Duration = Self.defaultLookback
    public static let defaultLookback = Duration.seconds(30)
    /// Objects per request (Parse caps it at 1,000).
    public var pageSize: Int = 1000
    /// Who names a pushed create's objectId (`object-ids`).
    public var objectIDs = ObjectIDs.server
    /// `where =`: a Parse query constraint (a JSON object, as the REST API takes it) every
    /// read of the class carries, so the replica holds the objects it matches. Nil: all.
    public var filter: String?

    /// Who names a new object.
    public enum ObjectIDs: String, Sendable, Equatable {
        /// Parse does (the default, and all a stock Parse Server allows): a create whose answer a
        /// crash lost is looked up by its fields and creation time before it is sent again.
        case server
        /// Ferry does, and sends it (Parse Server with `allowCustomObjectId: true`): a create sent
        /// twice names the same object, so nothing needs looking up.
        case client
    }

    public init(applicationID: String, className: String, key: Key) {
        self.applicationID = applicationID
        self.className = className
        self.key = key
    }

    public var kind: StoreKind { .parse }

    public func makeSource(_ context: RemoteSourceContext) throws(SyncError) -> any RemoteSource {
        ParseSource(context, options: self)
    }

    /// Parse's own fields of every object.
    public var remoteAssignedFields: [String] { ["objectId", "createdAt", "updatedAt"] }

    /// The class and its `where`.
    public var identity: String { "class=\(className)" + (filter.map { "\nwhere=\($0)" } ?? "") }

    public var credentials: [Secret] {
        switch key {
        case .master(let secret), .restAPI(let secret): [secret]
        }
    }

    /// Reads `application-id`, `class`, `lookback`, `page-size`, `object-ids`, `where` and the
    /// key secret.
    init?(reading reader: inout StoreOptionReader) {
        let applicationID = reader.required("application-id", "the app's X-Parse-Application-Id")
        var className = reader.required("class", "the Parse class to sync")
        if let name = className, name.contains(where: { !($0.isLetter || $0.isNumber || $0 == "_") }) {
            reader.problem("class", "\(name.debugDescription) is not a Parse class name (letters, digits and '_')")
            className = nil
        }
        let key: Key? = if let master = reader.secret("master-key") {
            .master(master)
        } else if let rest = reader.secret("rest-api-key") {
            .restAPI(rest)
        } else {
            nil
        }
        if key == nil, reader.text("master-key") == nil, reader.text("rest-api-key") == nil {
            reader.problem("rest-api-key", "store '\(reader.store)' needs rest-api-key = credential:NAME (or master-key)")
        }
        let lookback = reader.duration("look-back", default: Self.defaultLookback, allowZero: true, atMost: .seconds(86_400))
        // Parse serves at most 1,000 objects a request; a larger page-size is clamped to that.
        let pageSize = reader.integer("page-size", default: 1000, in: 1...100_000)
        var objectIDs: ObjectIDs? = .server
        if let text = reader.text("object-ids") {
            objectIDs = ObjectIDs(rawValue: text)
            if objectIDs == nil { reader.problem("object-ids", "expected server or client, got '\(text)'") }
        }
        var filter: String??
        if let text = reader.optional("where") {
            filter = Self.filter(text).map { .some($0) }
            if filter == nil {
                reader.problem("where", "expected a Parse query constraint, a JSON object such as {\"score\":{\"$gt\":10}}, got '\(text)'")
            }
        } else {
            filter = .some(nil)
        }
        guard let applicationID, let className, let key, let lookback, let pageSize, let objectIDs, let filter else { return nil }
        self.init(applicationID: applicationID, className: className, key: key)
        self.lookback = lookback
        self.pageSize = min(pageSize, 1000)
        self.objectIDs = objectIDs
        self.filter = filter
    }

    /// A `where` value as sent (as written: re-encoding could change its numbers): JSON whose
    /// top level is a non-empty object; nil otherwise.
    static func filter(_ text: String) -> String? {
        let text = text.trimmingCharacters(in: .whitespaces)
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], !object.isEmpty else { return nil }
        return text
    }
}

extension StoreKind {
    /// Parse Server REST: `GET /classes/<Class>`, incremental by updatedAt and objectId,
    /// deletions found by reconciling the full objectId listing.
    public static let parse = StoreKind(
        name: "parse", optionKeys: ["application-id", "class", "look-back", "lookback", "page-size", "object-ids", "where"],
        secretKeys: ["rest-api-key", "master-key"], reportsDeletions: false, versionComparison: .ordered, fetchesByID: true,
        localBody: .jsonObject, pushes: true, readOptions: { ParseOptions(reading: &$0) })
}
