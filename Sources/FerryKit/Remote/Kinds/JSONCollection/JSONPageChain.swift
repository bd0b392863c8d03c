import Foundation

/// How the pages of one listing follow each other (`pagination =`): from a page, the next
/// page's URL and, for `body:` and `body-offset`, the token its body carries; nil at the end.
///
/// Positional styles end where the page says so (`has-more-path`, which wins), at the total
/// (pages, or records for an offset), or at an empty page; never at a short one, since servers
/// cap the page size below what is asked. A page that points back into the chain fails it,
/// since it would loop forever; so does a next page on another scheme.
struct JSONPageChain {
    let options: JSONCollectionOptions
    /// The listing's first URL, asked again with another parameter (positional styles, cursors
    /// in a parameter) or another body (POST APIs).
    let firstURL: String
    let store: StoreConfiguration
    /// Records of the pages counted so far: where an offset goes on.
    private(set) var recordsRead = 0
    /// What page 1 said the listing holds (`total-path`).
    private var expectedTotal: Int64?
    private var visited: Set<String> = []
    private var visitedCursors: Set<String> = []

    init(options: JSONCollectionOptions, firstURL: String, store: StoreConfiguration) {
        self.options = options
        self.firstURL = firstURL
        self.store = store
    }

    /// A request for `url` is under way.
    mutating func asked(_ url: String) {
        visited.insert(url)
    }

    /// The chain starts again at page 1 (a listing that moved): counts, loops and the page-1
    /// total start afresh.
    mutating func restart() {
        recordsRead = 0
        expectedTotal = nil
        visited = []
        visitedCursors = []
    }

    /// Counts page `number`'s records, once its next page was decided, and returns the total
    /// page 1 states (for progress), if it states one.
    mutating func count(_ scanned: JSONPage, number: Int) -> Int64? {
        recordsRead += scanned.recordCount
        guard number == 1, let total = options.totalPath.flatMap({ scanned.fields[$0]?.text }).flatMap({ Int64($0) }) else { return nil }
        expectedTotal = total
        return total
    }

    /// At the end of the chain: fewer records than page 1's total said, and no page linked on.
    var shortfall: ReplicaGap? {
        guard let expectedTotal, recordsRead < expectedTotal else { return nil }
        let path = options.totalPath ?? "total-path"
        return .paginationEndedEarly(read: recordsRead, expected: Int(expectedTotal),
                                     hint: "page 1 said \(path) = \(expectedTotal) and no page linked further (check pagination =)")
    }

    /// Whether the page says another follows (`has-more-path`); nil when it does not say.
    func saysMore(_ scanned: JSONPage) -> Bool? {
        guard let path = options.hasMorePath, let text = scanned.fields[path]?.text else { return nil }
        return (text == "true") != options.hasMoreNegated
    }

    /// The next page's URL (and the cursor its body carries), nil at the end of the chain.
    mutating func next(after page: HTTPPageLoader.Page, _ scanned: JSONPage, number: Int) -> Result<(url: String, cursor: String?)?, SyncError> {
        let step: (url: String?, cursor: String?)
        switch decide(after: page, scanned, number: number) {
        case .failure(let error): return .failure(error)
        case .success(let decided): step = decided
        }
        // A link the server built from the request's URL echoes the configured secrets; the
        // loader adds them again to what it sends.
        guard let target = step.url.map(store.query.removingSecrets) else { return .success(nil) }
        // A POST API asks every page at one URL: there the cursors must not repeat.
        if let cursor = step.cursor {
            guard visitedCursors.insert(cursor).inserted else {
                return .failure(malformed(page, "pagination loops back to the page of cursor \(cursor.debugDescription)"))
            }
        } else if visited.contains(target) {
            return .failure(malformed(page, "pagination loops back to \(target.redactingUserInfo)"))
        }
        // file:// pages may only chain to files; http pages never to files.
        if target.lowercased().hasPrefix("file:") != store.url.lowercased().hasPrefix("file:") {
            return .failure(malformed(page, "next page \(target.redactingUserInfo) changes scheme"))
        }
        return .success((target, step.cursor))
    }

    /// What the pagination style makes of the page: the next URL and cursor, nil when the
    /// listing ends here.
    private func decide(after page: HTTPPageLoader.Page, _ scanned: JSONPage, number: Int) -> Result<(url: String?, cursor: String?), SyncError> {
        let ends: Result<(url: String?, cursor: String?), SyncError> = .success((nil, nil))
        switch options.pagination {
        case .singlePage:
            return ends
        case .pageNumber(let param):
            let last = totalPages(page, scanned).map { number >= $0 } ?? false
            if positionalListingEnds(scanned, reachedTotal: last) { return ends }
            return .success((URLQuery.setting(param, to: String(options.firstPage + number), in: firstURL), nil))
        case .offset(let param):
            let read = recordsRead + scanned.recordCount
            if positionalListingEnds(scanned, reachedTotal: reachedTotal(scanned, read: read)) { return ends }
            return .success((URLQuery.setting(param, to: String(read), in: firstURL), nil))
        case .bodyOffset:
            let read = recordsRead + scanned.recordCount
            if positionalListingEnds(scanned, reachedTotal: reachedTotal(scanned, read: read)) { return ends }
            return .success((firstURL, String(read)))
        case .beforeFirst(let param, let field):
            // Newest first, read toward newer entries: the next page is the one before this
            // page's first entry.
            guard saysMore(scanned) != false, let first = scanned.records.first,
                  let value = JSONPageDiagnosis.value(at: field, in: page.body, range: first.elementRange) else { return ends }
            return .success((URLQuery.setting(param, to: value, in: firstURL), nil))
        case .afterLast(let param, let field):
            guard saysMore(scanned) != false, let last = scanned.records.last,
                  let value = field == options.idField ? last.id : last.version, !value.isEmpty else { return ends }
            return .success((URLQuery.setting(param, to: value, in: firstURL), nil))
        case .headerCursor(let param, let header):
            guard let token = page.head.headers[header], !token.isEmpty else { return ends }
            return .success((URLQuery.setting(param, to: token, in: firstURL), nil))
        case .link:
            guard saysMore(scanned) != false else { return ends }
            return .success((LinkHeader.target(rel: "next", in: page.head.headers.values(for: "Link"), base: page.url), nil))
        case .nextURL(let path):
            // An API that hands out a next URL on its last page too (Zendesk's after_url, for
            // polling later) says where the listing ends: `has-more-path = !end_of_stream`.
            guard saysMore(scanned) != false, let text = scanned.fields[path]?.text, !text.isEmpty else { return ends }
            guard let target = LinkHeader.resolve(text, against: page.url) else {
                return .failure(malformed(page, "next URL \(text.debugDescription) at \(path) is not a URL"))
            }
            return .success((target, nil))
        case .cursor(let param, let path):
            guard saysMore(scanned) != false, let token = scanned.fields[path]?.text, !token.isEmpty else { return ends }
            return .success((URLQuery.setting(param, to: token, in: firstURL), nil))
        case .bodyCursor(let path):
            // The same URL, asked with the token in the body; `has_more: false` or no token ends it.
            guard saysMore(scanned) != false, let token = scanned.fields[path]?.text, !token.isEmpty else { return ends }
            return .success((firstURL, token))
        }
    }

    /// Whether `read` records reach the total the page states (`total-path`).
    private func reachedTotal(_ scanned: JSONPage, read: Int) -> Bool {
        options.totalPath.flatMap { scanned.fields[$0]?.text }.flatMap { Int($0) }.map { read >= $0 } ?? false
    }

    /// Whether a listing read by position ends with this page: where the page says so
    /// (`has-more-path`, which wins), else at an empty page or once `reachedTotal`.
    private func positionalListingEnds(_ scanned: JSONPage, reachedTotal: Bool) -> Bool {
        if let more = saysMore(scanned) { return !more }
        return scanned.recordCount == 0 || reachedTotal
    }

    /// How many pages the listing has, by `total-pages-path` or the headers APIs use.
    private func totalPages(_ page: HTTPPageLoader.Page, _ scanned: JSONPage) -> Int? {
        if let path = options.totalPagesPath, let text = scanned.fields[path]?.text { return Int(text) }
        for header in ["X-Total-Pages", "X-WP-TotalPages"] {
            if let text = page.head.headers[header], let pages = Int(text.trimmingCharacters(in: .whitespaces)) { return pages }
        }
        return nil
    }

    private func malformed(_ page: HTTPPageLoader.Page, _ message: String) -> SyncError {
        SyncError(.malformedResponse, store: store.name, url: page.request.url, message: message)
    }
}
