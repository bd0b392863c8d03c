import Foundation

/// A JSON collection store's settings (`kind = json`), checked when the configuration is loaded.
public struct JSONCollectionOptions: StoreOptions, Equatable {
    /// How the next page is found.
    public enum Pagination: Sendable, Equatable {
        /// RFC 8288 `Link: <url>; rel="next"`.
        case link
        /// A page field holding the next page's URL (relative URLs resolve against the current one).
        case nextURL(path: String)
        /// A page field holding a token sent as query parameter `param` of the first URL.
        case cursor(param: String, path: String)
        /// `page:PARAM`: numbered pages (WordPress's `page=N`), from ``firstPage``.
        case pageNumber(param: String)
        /// `offset:PARAM`: the next page starts after the records read so far (Jira's
        /// `startAt`), however many the server put on a page.
        case offset(param: String)
        /// `after:PARAM=FIELD`: the next page comes after the last record's id or version
        /// (Stripe's `starting_after=<id>`).
        case afterLast(param: String, field: String)
        /// `header:PARAM=HEADER`: a response header carries the token for the next page.
        case headerCursor(param: String, header: String)
        /// `body:PATH`: a page field holding the token the next request's body carries as
        /// `{cursor}` (``RequestBodyTemplate``: Notion's `next_cursor`, GraphQL's
        /// `pageInfo.endCursor`).
        case bodyCursor(path: String)
        /// `body-offset`: the next request's body carries the records read so far as
        /// `{offset}` (HubSpot's search, whose `after` counts results), however many the
        /// server put on a page.
        case bodyOffset
        /// `before:PARAM=FIELD`: a listing newest first, read toward newer records: the next
        /// page comes before the page's first record (Stripe's `ending_before=<id>`).
        case beforeFirst(param: String, field: String)
        /// One page.
        case singlePage

        var isBodyCursor: Bool {
            if case .bodyCursor = self { true } else { false }
        }

        /// Styles that ask for pages by position, so a listing that moves while it is read can
        /// repeat or skip records (checked by ``JSONPageProducer``).
        var isPositional: Bool {
            switch self {
            case .pageNumber, .offset, .bodyOffset: true
            case .link, .nextURL, .cursor, .afterLast, .headerCursor, .bodyCursor, .beforeFirst, .singlePage: false
            }
        }
    }

    /// Where the record array is in a page ("" = the page is the array).
    public var recordsPath = ""
    public var idField = "id"
    /// What orders a record's versions (an update time or a counter); nil (`version-field =
    /// none`): the records carry nothing that changes with each update (Stripe's objects), so
    /// a record's version is a digest of its JSON (``JSONContentDigest``), versions are only
    /// told apart, not ordered, and every pass lists everything.
    public var versionField: String? = "updated_at"
    public var pagination = Pagination.link
    /// The query parameter asking for "updated after" (incremental passes).
    public var updatedParam: String?
    /// `since-param = PARAM=TEMPLATE`: a query parameter set on every pass to TEMPLATE with
    /// `{since}` filled (Jira's `jql=updated >= "{since}" ORDER BY updated`), the earliest
    /// time when listing everything.
    public var sinceParam: SinceParameter?
    /// How `{since}` and `updated-param`'s value are written (`since-format`,
    /// `since-timezone`, `look-back`).
    public var since = SinceValue()
    /// `request-body =`: every listing request is a POST of this JSON (a search or GraphQL API).
    public var requestBody: RequestBodyTemplate?

    /// A query parameter whose value is a template around `{since}`.
    public struct SinceParameter: Sendable, Equatable {
        public var name: String
        public var template: String

        func value(_ since: String) -> String { template.replacingOccurrences(of: "{since}", with: since) }
    }
    /// The query parameter carrying ``pageSize``.
    public var pageSizeParam: String?
    /// Where the first page states the total count (progress and ETA; with `offset:`, where the
    /// listing ends).
    public var totalPath: String?
    /// Where a page says whether another follows (`has_more`): false ends the listing, true
    /// goes on even after an empty page.
    public var hasMorePath: String?
    /// `has-more-path = !PATH`: the page says the opposite, that it is the last
    /// (Zendesk's `end_of_stream`, Salesforce's `done`).
    public var hasMoreNegated = false
    /// Where a page says how many pages there are (`page:`); without it the `X-Total-Pages` or
    /// `X-WP-TotalPages` header, else an empty page, ends the listing.
    public var totalPagesPath: String?
    /// The number of the first page (`page:`): 1 by default, 0 for APIs that count from 0.
    public var firstPage = 1
    /// How the API marks a deleted record in its listing (`deleted-when`); nil: it does not,
    /// and deletions are found by sweeps.
    public var deletedWhen: DeletionTest?
    /// Where the last page says how the next pass starts (`delta-link`, `sync-token`); nil:
    /// from the store's URL (with `updated-param` when set).
    public var deltaStart: DeltaStart?

    /// How an API hands the next pass its start: a delta query's link or a sync token.
    public enum DeltaStart: Sendable, Equatable {
        /// `delta-link = PATH`: the last page holds the URL the next pass starts from
        /// (Microsoft Graph's `@odata\.deltaLink`).
        case link(path: String)
        /// `sync-token = PARAM=PATH`: the last page holds a token the next pass sends as PARAM
        /// (Google's `nextSyncToken`, sent as `syncToken`).
        case token(param: String, path: String)

        var path: String {
            switch self {
            case .link(let path), .token(_, let path): path
            }
        }
    }
    public var pageSize = 1000
    public var authentication = HTTPAuthentication.none
    /// How local writes are pushed (`push-create`, `push-update`, `push-delete`).
    public var push = JSONPushTemplates()
    /// A second listing saying what changed (`changes.url`, `deletions.url`): ``JSONFeed``.
    public var feed: JSONFeed?

    public init() {}

    public var kind: StoreKind { .json }

    /// The record's id and version fields, when they are at its top level (a path into the
    /// record names a field of the record's own).
    public var remoteAssignedFields: [String] {
        [idField, versionField].compactMap(\.self).filter { !$0.contains(".") && !$0.contains("[") }
    }

    /// A digest version tells two versions apart but cannot say which is newer.
    public var versionComparison: VersionComparison { versionField == nil ? .opaque : kind.versionComparison }

    /// How the scanner finds a record's id and version.
    func recordLayout(recordsPath: String, fieldPaths: [String] = []) -> JSONRecordScanner.Layout {
        .init(recordsPath: recordsPath, idPath: idField, versionPath: versionField, versionIsDigest: versionField == nil,
              fieldPaths: fieldPaths, allowsIntegerIDs: true)
    }

    /// The version field as messages name it.
    var versionFieldName: String { versionField ?? "none" }

    /// What a record must hold, as messages name it: its id and version fields.
    var recordFieldNames: String { versionField.map { "\(idField) and \($0)" } ?? idField }

    public func makeSource(_ context: RemoteSourceContext) throws(SyncError) -> any RemoteSource {
        JSONCollectionSource(context, options: self)
    }

    public var credentials: [Secret] { authentication.secrets }

    public var pushableOperations: Set<LocalOperation> { push.operations }

    public var pushProblem: String? {
        push.operations.isEmpty ? "push = yes needs at least one of push-create, push-update and push-delete (a method and a URL template, such as PATCH {url}/{id}): a JSON API has no one way to write" : nil
    }

    public func makeWriter(_ context: RemoteSourceContext) throws(SyncError) -> any RemoteWriter {
        JSONCollectionWriter(context, options: self)
    }

    /// A path as people write it, `$.data.items` (as `column.` paths are written) or
    /// `data.items`, in the second form.
    static func fieldPath(_ text: String) -> String {
        if text == "$" { return "" }
        return text.hasPrefix("$.") ? String(text.dropFirst(2)) : text
    }

    /// Reads the JSON keys of one section; with `base`, the keys of a feed of the store `base`
    /// describes (``JSONFeed``), whose page layout and versions default to the store's.
    init?(reading reader: inout StoreOptionReader, inheriting base: JSONCollectionOptions? = nil) {
        var valid = true
        if let base {
            recordsPath = base.recordsPath
            idField = base.idField
            versionField = base.versionField
            pagination = base.pagination
            hasMorePath = base.hasMorePath
            hasMoreNegated = base.hasMoreNegated
            totalPagesPath = base.totalPagesPath
            firstPage = base.firstPage
            pageSizeParam = base.pageSizeParam
            totalPath = base.totalPath
            pageSize = base.pageSize
            since = base.since
            authentication = base.authentication
        }
        for key in ["records-path", "id-field", "version-field"] {
            guard let value = reader.text(key).map(Self.fieldPath) else { continue }
            // The records path may be empty (the page is the array); a field path may not.
            if key == "version-field", value == "none" {
                versionField = nil
            } else if value.isEmpty ? key != "records-path" : !JSONPath.isValid(value) {
                reader.problem(key, "\(value.debugDescription) is not a dotted field path such as id or data.items"
                               + (key == "version-field" ? ", or none" : ""))
                valid = false
            } else {
                switch key {
                case "records-path": recordsPath = value
                case "id-field": idField = value
                default: versionField = value
                }
            }
        }
        if let spec = reader.text("pagination") {
            if let parsed = Self.pagination(spec) {
                pagination = parsed
            } else {
                let style = String(spec.prefix { $0 != ":" })
                let hint = Suggestion.closest(to: style, in: ["link", "next-url", "cursor", "page", "offset", "after", "before", "header", "body", "body-offset", "none"])
                    .map { " (did you mean \($0)\(spec.contains(":") ? ":" : "")?)" } ?? ""
                reader.problem("pagination", "\(spec.debugDescription) is not one of " + Self.paginationForms + hint)
                valid = false
            }
        }
        if case .afterLast(_, let field)? = Self.pagination(reader.text("pagination") ?? ""), field != idField, field != versionField, base == nil {
            reader.problem("pagination", versionField == nil ? "after: takes the records' id-field (\(idField)), not \(field)"
                           : "after: takes the records' id-field (\(idField)) or version-field (\(versionFieldName)), not \(field)")
            valid = false
        }
        if let spec = reader.text("deleted-when") {
            if let test = DeletionTest(spec) { deletedWhen = test } else {
                reader.problem("deleted-when", "\(spec.debugDescription) is not PATH or PATH = VALUE, as in deleted-when = deleted or deleted-when = status = cancelled")
                valid = false
            }
        }
        if let spec = reader.text("delta-link") {
            let path = Self.fieldPath(spec)
            if JSONPath.isValid(path) { deltaStart = .link(path: path) } else {
                reader.problem("delta-link", "\(spec.debugDescription) is not a field path, as in delta-link = @odata\\.deltaLink")
                valid = false
            }
        }
        if let spec = reader.text("sync-token") {
            let parts = spec.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if parts.count == 2, !parts[0].isEmpty, JSONPath.isValid(Self.fieldPath(parts[1])), deltaStart == nil {
                deltaStart = .token(param: parts[0], path: Self.fieldPath(parts[1]))
            } else {
                reader.problem("sync-token", deltaStart != nil ? "set either delta-link or sync-token, not both"
                               : "\(spec.debugDescription) is not PARAM=PATH, as in sync-token = syncToken=nextSyncToken")
                valid = false
            }
        }
        if let since = SinceValue(reading: &reader, defaults: since) { self.since = since } else { valid = false }
        if let spec = reader.text("since-param") {
            let parts = spec.split(separator: "=", maxSplits: 1).map(String.init)
            if parts.count == 2, !parts[0].isEmpty, parts[1].contains("{since}") {
                sinceParam = SinceParameter(name: parts[0].trimmingCharacters(in: .whitespaces), template: parts[1].trimmingCharacters(in: .whitespaces))
            } else {
                reader.problem("since-param", "\(spec.debugDescription) is not PARAM=TEMPLATE with {since} in the template, as in since-param = jql=updated >= \"{since}\" ORDER BY updated")
                valid = false
            }
        }
        if let text = reader.text("request-body") {
            if let template = RequestBodyTemplate(text) { requestBody = template } else {
                reader.problem("request-body", "is not a JSON object once {cursor}, {since} and {page_size} are filled, as in request-body = {\"page_size\": {page_size}, \"start_cursor\": {cursor}}")
                valid = false
            }
        }
        if case .bodyCursor = pagination, requestBody?.usesCursor != true {
            reader.problem("pagination", "body: pagination sends the token as {cursor} in request-body, which \(requestBody == nil ? "is not set" : "has no {cursor}")")
            valid = false
        }
        if requestBody?.usesCursor == true, !(pagination.isBodyCursor) {
            reader.problem("request-body", "has {cursor}, which only pagination = body:PATH fills")
            valid = false
        }
        if pagination == .bodyOffset, requestBody?.usesOffset != true {
            reader.problem("pagination", "body-offset pagination sends the records read so far as {offset} in request-body, which \(requestBody == nil ? "is not set" : "has no {offset}")")
            valid = false
        }
        if requestBody?.usesOffset == true, pagination != .bodyOffset {
            reader.problem("request-body", "has {offset}, which only pagination = body-offset fills")
            valid = false
        }
        if let spec = reader.optional("has-more-path") {
            hasMoreNegated = spec.hasPrefix("!")
            hasMorePath = Self.fieldPath(hasMoreNegated ? String(spec.dropFirst()) : spec)
        }
        totalPagesPath = reader.optional("total-pages-path").map(Self.fieldPath) ?? totalPagesPath
        if let first = reader.integer("first-page", default: firstPage, in: 0...1) { firstPage = first } else { valid = false }
        updatedParam = reader.optional("updated-param")
        if sinceParam != nil, updatedParam != nil {
            reader.problem("since-param", "set either updated-param or since-param, not both")
            valid = false
        }
        // An incremental filter asks for records newer than the highest version seen, which a
        // digest has no order for.
        if versionField == nil, let key = updatedParam != nil ? "updated-param" : sinceParam != nil ? "since-param" : nil {
            reader.problem(key, "needs a version-field the API filters on (an update time); with version-field = none every pass lists everything")
            valid = false
        }
        pageSizeParam = reader.optional("page-size-param") ?? pageSizeParam
        totalPath = reader.optional("total-path").map(Self.fieldPath) ?? totalPath
        if let size = reader.integer("page-size", default: pageSize, in: 1...100_000) { pageSize = size } else { valid = false }
        if reader.url.lowercased().hasPrefix("file:"), case .link = pagination, valid {
            reader.problem("pagination", "link pagination needs HTTP headers; a chain of file: pages uses next-url:<path>")
            valid = false
        }
        if let push = JSONPushTemplates(reading: &reader) { self.push = push } else { valid = false }
        if versionField == nil, push.ifMatch {
            reader.problem("push-if-match", "sends the version as If-Match, but with version-field = none the version is Ferry's digest of the record, not the API's ETag")
            valid = false
        }
        guard base == nil else {
            // A feed is asked with the store's credentials, on the store's origin.
            guard valid else { return nil }
            return
        }
        let basic = reader.basicAuthentication()
        switch (basic, reader.secret("bearer-token")) {
        case (nil, _):
            valid = false
        case (.some(.none), let token?):
            authentication = .bearer(token)
        case (.some(let basic), nil):
            authentication = basic
        case (.some, _?):
            reader.problem("bearer-token", "set either bearer-token or username and password, not both")
            valid = false
        }
        feed = JSONFeed.read(from: &reader, store: self, valid: &valid)
        if let feed, feed.role == .changes, feed.listing.deletedWhen == nil, deletedWhen == nil {
            reader.problem("changes.url", "a changes feed says which of its entries are deletions: set changes.deleted-when (Stripe: type = customer.deleted), or use deletions.url for a feed of deletions alone")
            valid = false
        }
        guard valid else { return nil }
    }

    static func pagination(_ spec: String) -> Pagination? {
        let text = spec.trimmingCharacters(in: .whitespaces)
        if text == "link" { return .link }
        if text == "none" { return .singlePage }
        if text == "body-offset" { return .bodyOffset }
        if text.hasPrefix("next-url:") {
            let path = fieldPath(String(text.dropFirst("next-url:".count)))
            return path.isEmpty ? nil : .nextURL(path: path)
        }
        func pair(_ prefix: String) -> (String, String)? {
            guard text.hasPrefix(prefix) else { return nil }
            let rest = text.dropFirst(prefix.count)
            guard let equals = rest.firstIndex(of: "=") else { return nil }
            let first = String(rest[..<equals]), second = String(rest[rest.index(after: equals)...])
            return first.isEmpty || second.isEmpty ? nil : (first, second)
        }
        func single(_ prefix: String) -> String? {
            guard text.hasPrefix(prefix) else { return nil }
            let param = String(text.dropFirst(prefix.count))
            return param.isEmpty || param.contains("=") ? nil : param
        }
        if let (param, path) = pair("cursor:") { return .cursor(param: param, path: fieldPath(path)) }
        if let (param, field) = pair("after:") { return .afterLast(param: param, field: fieldPath(field)) }
        if let (param, header) = pair("header:") { return .headerCursor(param: param, header: header) }
        if let (param, field) = pair("before:") { return .beforeFirst(param: param, field: fieldPath(field)) }
        if text.hasPrefix("body:") {
            let path = fieldPath(String(text.dropFirst("body:".count)))
            return path.isEmpty ? nil : .bodyCursor(path: path)
        }
        if let param = single("page:") { return .pageNumber(param: param) }
        if let param = single("offset:") { return .offset(param: param) }
        return nil
    }

    /// Every `pagination =` form, for the message that refuses another.
    static let paginationForms = "link, next-url:<path>, cursor:<param>=<path>, page:<param>, offset:<param>, "
        + "after:<param>=<id or version field>, before:<param>=<field>, header:<param>=<header>, body:<path>, body-offset or none"

    /// The page-level fields the scanner reports: the pagination's own, the total, and (for
    /// field pagination) the names APIs commonly use, to say which one a page has when the
    /// configured one is missing.
    var fieldPaths: [String] {
        var paths: [String] = []
        switch pagination {
        case .nextURL(let path), .cursor(_, let path), .bodyCursor(let path):
            paths.append(path)
            paths += JSONPageDiagnosis.commonNextFields.filter { $0 != path }
        case .link, .singlePage, .pageNumber, .offset, .afterLast, .headerCursor, .beforeFirst, .bodyOffset: break
        }
        for path in [totalPath, hasMorePath, totalPagesPath, deltaStart?.path].compactMap(\.self) where !paths.contains(path) { paths.append(path) }
        return paths
    }

    /// The `pagination =` value that reads the next page from `path`, in this store's style.
    func paginationSpec(path: String) -> String {
        switch pagination {
        case .cursor(let param, _): "cursor:\(param)=\(path)"
        case .bodyCursor: "body:\(path)"
        default: "next-url:\(path)"
        }
    }
}

extension StoreKind {
    /// A paginated JSON collection: GitHub style, Datasette style, or a chain of `file:` pages.
    public static let json = StoreKind(
        name: "json",
        optionKeys: Set(["records-path", "id-field", "version-field", "pagination", "updated-param", "page-size-param",
                         "total-path", "page-size", "username", "has-more-path", "total-pages-path", "first-page", "deleted-when", "delta-link", "sync-token",
                         "request-body", "since-param", "since-format", "since-timezone", "look-back", "lookback"])
            .union(JSONPushTemplates.keys).union(JSONFeed.optionKeys),
        secretKeys: ["bearer-token", "password"], reportsDeletions: false, versionComparison: .ordered,
        urlSchemes: ["http", "https", "file"], fetchesByID: false, localBody: .jsonObject, pushes: true,
        readOptions: { JSONCollectionOptions(reading: &$0) })
}
