import Foundation
import Logging

/// Fetches and scans the pages of one JSON collection pass on a thread of its own, and hands
/// each scanned page, in order, to the pass's run loop (see ``JSONCollectionSource``).
///
/// Why a second thread: the sink merges a batch synchronously on the pass's loop (about 0.2 s
/// for 10,000 new records here), and a loop that merges cannot fetch or scan. Scanning a page
/// and turning its records into ``RemoteRecord``s costs about a tenth of merging it
/// (`ferry-bench json-e2e`); on this thread it overlaps the merge instead of adding to it.
///
/// Memory stays bounded: after handing over `maxUnconsumedRecords` records the pass has not
/// yet taken, the producer waits before requesting the next page (``consumed(_:)`` resumes it).
/// Everything here runs on the producer's own loop; the only shared things are the immutable
/// configuration and the events, which are values.
final class JSONPageProducer: RunLoopOperation<Void>, @unchecked Sendable {
    /// A 2xx page, scanned.
    struct ScannedPage: Sendable {
        var number: Int
        var changes: [RecordChange]
        var problems: [RecordProblem]
        /// Ids to list when reconciling.
        var ids: [String]
        var bodyBytes: Int
        var totalHint: Int64?
        /// The page's URL, redacted, for the batch's origin.
        var origin: String
        /// The cursor as it stands after this page.
        var cursor: JSONCollectionCursor
        /// No page follows (the chain ended, or the rate limit stopped it).
        var isLast: Bool
        /// Set when the page exhausted the rate limit: the pass fails with it once the page is merged.
        var rateLimit: SyncError?
        var requests: Int
        /// On the last page: how the pass knows it read less than the collection holds.
        var gaps: [ReplicaGap] = []
        /// What the page held, to store with it; nil when it had a record that could not be
        /// stored, or the store keeps no digests.
        var digest: PageDigest?
        /// Records of a page skipped because its digest is the one stored: merged before.
        var unchangedRecords = 0
        /// On the last event of a chain read to its end: the chain's last page (pages a sweep
        /// reads again for their ids come after it).
        var endsChainAt: Int?
        /// On the last event: every page was as ``Setup/listingAtRest`` vouched, and counted.
        var listingUnchanged = false
        /// The listing moved while it was read: the next page is page 1 again (``ListingDrift``).
        var restartsListing = false
        /// The API no longer knows the start this read began from (a delta or a feed's start).
        var startExpired = false
    }

    /// What the producer hands the pass, in page order. Nothing follows `.notModified` or `.failed`.
    enum Event: Sendable {
        case page(ScannedPage)
        /// The first page answered 304: the collection is unchanged.
        case notModified(requests: Int)
        /// A page could not be fetched or used; nothing of it is in any event.
        case failed(SyncError)
    }

    /// The collection and how to read it; fixed for the pass.
    struct Setup: Sendable {
        var store: StoreConfiguration
        var logger: Logger
        var options: JSONCollectionOptions
        var scanner: JSONRecordScanner
        var headers: HTTPHeaders
        /// The headers without credentials, for pages on another origin than the store's URL.
        var publicHeaders: HTTPHeaders
        var session: SessionConfiguration
        var reconcile: Bool
        var firstURL: String
        var firstRequest: HTTPRequest
        /// The cursor the pass starts from (its high-water mark carried over when incremental).
        var cursor: JSONCollectionCursor
        var maxUnconsumedRecords: Int
        /// How HTTP errors of this store are worded and what they must never contain.
        var errorContext: HTTPStatusClassifier.Context
        /// What the pages' digests are seeded with; nil: the store keeps no digests (it pushes
        /// local writes, which its pulls must meet record by record).
        var digestSeed: UInt64?
        /// The digests stored when the pages were last merged (``PassPlan/pageDigests``).
        var knownDigests: [Int: Int64] = [:]
        /// ``PassPlan/listingAtRest``: `knownDigests` are the last sweep's listing.
        var listingAtRest = false
        /// The first request is the delta start the API handed the last pass (`delta-link`,
        /// `sync-token`), which it may have expired.
        var startsFromDelta = false
        /// `{since}` as this pass fills it in `request-body` (``SinceValue``).
        var since = ""
        /// Set when the pages are a feed's (``JSONFeed``), not the store's own listing.
        var feed: FeedReading?
    }

    /// How a feed's pages become changes.
    struct FeedReading: Sendable {
        var feed: JSONFeed
        /// Only where the feed stands is wanted (its newest entry): no change is made of it.
        var headOnly: Bool
    }

    /// A listing request: a GET of `url`, or with `request-body` a POST of the body filled
    /// with `cursor` and `since`. Such a POST only reads, so it is sent again as a GET would
    /// be (``HTTPRequest/readsOnly``).
    static func request(url: String, headers: HTTPHeaders, options: JSONCollectionOptions, cursor: String?, since: String) -> HTTPRequest {
        guard let template = options.requestBody else { return HTTPRequest(url: url, headers: headers) }
        var headers = headers
        headers.set("Content-Type", "application/json")
        // A body-offset listing's "cursor" is the records read so far.
        let offset = options.pagination == .bodyOffset ? cursor.flatMap { Int($0) } ?? 0 : 0
        var request = HTTPRequest(method: "POST", url: url, headers: headers,
                                  body: template.render(cursor: options.pagination == .bodyOffset ? nil : cursor, since: since,
                                                        pageSize: options.pageSize, offset: offset))
        request.readsOnly = true
        return request
    }

    /// A page to request: the chain's next, or one a sweep counted and now reads for its ids.
    private struct Target {
        var number: Int
        var request: HTTPRequest
        /// Whether the request may carry the store's credentials (``mayCarryCredentials(_:)``).
        var credentials: Bool
        var isReread = false
        /// Page 1 asked again after the listing moved (``ListingDrift``).
        var isRestart = false
    }

    private enum State {
        case idle
        case loading(Target)
        /// Waiting for the pass to take pages before requesting the target.
        case paused(Target)
        case done
    }

    private let setup: Setup
    private let deliver: @Sendable (Event) -> Void
    /// Touched only on the producer's thread, from here on.
    private var state = State.idle
    private var loader: HTTPPageLoader?
    private var next: JSONCollectionCursor
    private var visited: Set<String> = []
    private var visitedCursors: Set<String> = []
    private var warnedUnsorted = false
    private var warnedOtherOrigin = false
    private var unconsumed = 0
    /// Records of every page so far, and what page 1 said the collection holds.
    private var recordsRead = 0
    private var expectedTotal: Int64?
    /// While true, every page of a sweep so far is as the last sweep listed it
    /// (``Setup/listingAtRest``): such pages are counted, not listed, and kept in `counted`.
    private var vouched: Bool
    private var counted: [Target] = []
    /// Counted pages to read again for their ids, once a page or the chain's length turned
    /// out different: the listing must then name every id.
    private var rereads: [Target] = []
    private var chainLength: Int?
    /// For pages asked for by position (``Pagination/isPositional``): what the listing read
    /// so far shows of its moving, and how often it was read again from page 1 for it.
    private var drift = ListingDrift()
    private var restarts = 0
    /// A listing that moved is read again from page 1 this often before the pass says it is
    /// incomplete: each read that moves costs a whole listing, and an API busy enough to move
    /// every one is left to the next pass.
    static let maxRestarts = 2
    /// The highest version seen in this pass (not the stored mark it started from), to notice
    /// pages that are not sorted by version.
    private var passMark: String?

    /// `deliver` is called on the producer's thread; it must hand the event to the pass's loop.
    init(_ setup: Setup, deliver: @escaping @Sendable (Event) -> Void) {
        self.setup = setup
        self.deliver = deliver
        self.next = setup.cursor
        self.vouched = setup.reconcile && setup.listingAtRest
        super.init()
        name = "ferry-json-pages-\(setup.store.name)"
    }

    private var store: StoreConfiguration { setup.store }
    private var commitsPerPage: Bool { setup.options.updatedParam != nil && !setup.options.pagination.isPositional }

    override func run() {
        var session = setup.session
        if store.url.lowercased().hasPrefix("file://") {
            // A demo dataset may be a chain of files; file:// is allowed only for such a store.
            session.allowedProtocols.insert("file")
        }
        loader = HTTPPageLoader(configuration: session, query: store.query, retry: ReadRetry(maxRetries: session.readRetries))
        loader?.reportRetries(to: setup.logger, store: store.name)
        load(Target(number: 1, request: setup.firstRequest, credentials: true))
    }

    override func cancelRun() {
        loader?.cancel()
        state = .done
        finish(.success(()))
    }

    /// The pass took `records` records of delivered pages; a paused producer may go on.
    func consumed(_ records: Int) {
        perform { [self] in
            self.unconsumed -= records
            guard case .paused(let target) = self.state, self.unconsumed < self.setup.maxUnconsumedRecords else { return }
            self.load(target)
        }
    }

    private func load(_ target: Target) {
        guard let loader else { return }
        state = .loading(target)
        visited.insert(target.request.url)
        loader.load(target.request, configuredQuery: target.credentials) { [weak self] result in
            self?.received(result)
        }
    }

    /// Whether a page at `url` may get the store's credentials: only on the store URL's origin
    /// (or that host upgraded to https). A page elsewhere is asked for without them, and says
    /// so in the journal once.
    private func mayCarryCredentials(_ url: String) -> Bool {
        guard let home = URLOrigin(store.url), let target = URLOrigin(url) else { return true }
        if home.trusts(target) { return true }
        if !warnedOtherOrigin {
            warnedOtherOrigin = true
            setup.logger.notice("store \(store.name): pagination leads to another origin (\(target.scheme)://\(target.host):\(target.port)); its pages are fetched without the store's credentials",
                                metadata: ["store": "\(store.name)"])
        }
        return false
    }

    private func end(with event: Event) {
        loader?.cancel()
        state = .done
        deliver(event)
        finish(.success(()))
    }

    // MARK: Pages

    private func received(_ result: Result<HTTPPageLoader.Page, TransferError>) {
        guard case .loading(let target) = state, let loader else { return }
        let number = target.number
        let page: HTTPPageLoader.Page
        switch result {
        case .failure(let error): return end(with: .failed(SyncError(error, store: store, position: "page \(number)")))
        case .success(let loaded): page = loaded
        }
        let status = page.head.status
        if status == 304, number == 1, !target.isReread, !target.isRestart {
            return end(with: .notModified(requests: loader.requestCount))
        }
        // The API expired its delta start (Google's 410, Graph's syncStateNotFound), or no
        // longer knows a feed's start (Stripe's 400 resource_missing past its 30 days of events):
        // the start is forgotten, and the source lists everything and sweeps what went.
        let expiredStatuses: Set<Int> = setup.feed == nil ? [410] : [400, 404, 410]
        if expiredStatuses.contains(status), number == 1, setup.startsFromDelta {
            var expired = ScannedPage(number: 1, changes: [], problems: [], ids: [], bodyBytes: 0, totalHint: nil,
                                      origin: page.request.url.redactingUserInfo, cursor: JSONCollectionCursor(highWater: next.highWater),
                                      isLast: true, rateLimit: nil, requests: loader.requestCount)
            expired.startExpired = true
            let what = setup.feed == nil ? "the delta start" : "the change feed's start"
            expired.gaps = [.sweepSkipped(reason: "the API expired \(what) (HTTP \(status))")]
            return end(with: .page(expired))
        }
        guard (200..<300).contains(status) else {
            return end(with: .failed(page.statusError(target: number == 1 ? .configuredURL : .derivedURL, position: "page \(number)",
                                                      context: setup.errorContext)))
        }
        let digest = setup.digestSeed.map { PageDigest(page: number, value: PageDigest.of(url: page.request.url, body: page.body, seed: $0)) }
        // The same bytes at the same place as when last merged: the same records, merged then.
        let unchanged = digest.map { setup.knownDigests[number] == $0.value } ?? false
        // A sweep listing pages the last sweep listed as they are counts them instead, until a
        // page differs.
        if vouched, !unchanged { vouched = false }
        if vouched { counted.append(target) }
        // Of an unchanged page a sweep needs the ids, and a pass between sweeps only the count.
        let listsIDs = setup.reconcile && !vouched
        // A listing read by position needs every page's ids to notice that it moved.
        var detail: JSONRecordScanner.Detail = unchanged ? (listsIDs || setup.options.pagination.isPositional ? .ids : .count) : .records
        // The next page is asked for after the last record: its id (or version) is needed.
        if case .afterLast(_, let field) = setup.options.pagination, detail != .records {
            detail = field == setup.options.idField ? .ids : .records
        }
        let scanned: JSONPage
        do {
            scanned = try setup.scanner.scan(page.body, detail: detail)
        } catch {
            // A GraphQL API answers a query it cannot run with 200 and `errors` instead of data.
            // GitHub's GraphQL API says RATE_LIMITED this way too: waited out like a 429.
            if error.kind == .shape, let errors = Self.reportedErrors(page.body) {
                let limited = HTTPStatusClassifier.namesRateLimit(page.body)
                return end(with: .failed(SyncError(limited ? .rateLimited : .remote(code: "errors"), store: store.name, url: page.request.url,
                                                   position: "page \(number)",
                                                   message: (limited ? "rate limited: " : "the API answered with errors instead of records: ") + errors,
                                                   retryAfter: limited ? HTTPStatusClassifier.retryAfter(page.head.headers) : nil)))
            }
            if error.kind == .shape, number == 1, let problem = Self.recordsPathProblem(page.body, options: setup.options) {
                return end(with: .failed(SyncError(.configuration, store: store.name, url: page.request.url, position: "page 1", message: problem)))
            }
            return end(with: .failed(page.malformedJSON(error, store: store.name)))
        }
        if number == 1, !target.isReread, setup.feed?.headOnly != true,
           let problem = Self.misconfiguration(scanned, options: setup.options, isTombstone: { self.deletes($0, in: page.body) }) {
            return end(with: .failed(SyncError(.configuration, store: store.name, url: page.request.url, position: "page 1", message: problem)))
        }

        if case .beforeFirst = setup.options.pagination, setup.feed?.headOnly == false, !setup.startsFromDelta, number == 1,
           saysMore(scanned) == true {
            // A feed read from no start (it was empty when the store was listed) whose newest
            // page says older entries follow: those are behind page 1, not before it, and a
            // feed walked toward newer entries cannot reach them. The next pass lists everything.
            var behind = ScannedPage(number: 1, changes: [], problems: [], ids: [], bodyBytes: 0, totalHint: nil,
                                     origin: page.request.url.redactingUserInfo, cursor: JSONCollectionCursor(highWater: next.highWater),
                                     isLast: true, rateLimit: nil, requests: loader.requestCount)
            behind.startExpired = true
            behind.gaps = [.sweepSkipped(reason: "the change feed gained more than a page of entries while it had no start")]
            return end(with: .page(behind))
        }
        if setup.options.pagination.isPositional, !target.isReread {
            let totals = ListingDrift.totalHeaders.compactMap { name in page.head.headers[name].map { (name, $0.trimmingCharacters(in: .whitespaces)) } }
                + (setup.options.totalPath.flatMap { path in scanned.fields[path]?.text.map { (path, $0) } }.map { [$0] } ?? [])
            drift.note(page: number, ids: scanned.records.compactMap(\.id), totals: totals)
        }
        var nextURL: String?
        var nextCursor: String?
        if !target.isReread {
            switch nextPage(after: page, scanned, number: number) {
            case .failure(let error): return end(with: .failed(error))
            case .success(let next): (nextURL, nextCursor) = (next?.url, next?.cursor)
            }
        }
        var chainEnds = !target.isReread && nextURL == nil
        var restart: Target?
        if chainEnds, setup.options.pagination.isPositional {
            drift.end(totalNamed: ["X-WP-Total", "X-Total", "X-Total-Count"] + (setup.options.totalPath.map { [$0] } ?? []))
            if let moved = drift.moved, restarts < Self.maxRestarts {
                // What was read is merged (an upsert is an upsert); what the move may have
                // skipped is found by reading the listing again, with the same filter.
                restarts += 1
                setup.logger.notice("store \(store.name): the listing moved while it was read page by page (\(moved)); reading it again from page 1 (\(restarts) of \(Self.maxRestarts))",
                                    metadata: ["store": "\(store.name)"])
                var request = setup.firstRequest
                request.headers.remove("If-None-Match")
                request.headers.remove("If-Modified-Since")
                restart = Target(number: 1, request: request, credentials: true, isRestart: true)
                chainEnds = false
                // The listing is read whole again: no page of it is vouched for.
                vouched = false
                counted = []
            }
        }
        if chainEnds {
            chainLength = number
            // A vouched listing is the last sweep's only if it is as long.
            if vouched, number != setup.knownDigests.count { vouched = false }
            if !vouched { rereads = counted }
            counted = []
        }
        let exhausted = (nextURL != nil || !rereads.isEmpty) && HTTPStatusClassifier.isRateLimitExhausted(page.head.headers)
        let rateLimit = exhausted
            ? SyncError(.rateLimited, store: store.name, url: page.request.url, position: "page \(number)",
                        message: "rate limit exhausted (X-RateLimit-Remaining: 0)",
                        retryAfter: HTTPStatusClassifier.retryAfter(page.head.headers))
            : nil
        // Records handed over with this page (changes and problems), which the pass has to take.
        let records = unchanged ? 0 : scanned.records.count
        // The next page is requested before this one's records are built, so its transfer
        // overlaps that work instead of following it (a page's round trip was a quarter of
        // this thread's time on loopback), unless the pass is behind.
        var following: Target?
        if !exhausted {
            if let restart {
                following = restart
            } else if let nextURL {
                let credentials = mayCarryCredentials(nextURL)
                let request = Self.request(url: nextURL, headers: credentials ? setup.headers : setup.publicHeaders, options: setup.options,
                                           cursor: nextCursor, since: setup.since)
                following = Target(number: number + 1, request: request,
                                   credentials: credentials)
            } else if !rereads.isEmpty {
                var reread = rereads.removeFirst()
                reread.isReread = true
                following = reread
            }
        }
        let isLast = following == nil
        if let following {
            if unconsumed + records < setup.maxUnconsumedRecords {
                load(following)
            } else {
                state = .paused(following)
            }
        }

        var changes: [RecordChange] = []
        var problems: [RecordProblem] = []
        var ids: [String] = []
        var bodyBytes = 0
        // Digest versions (version-field = none) have no order: no mark to keep.
        let ordered = setup.options.versionField != nil
        if !unchanged { changes.reserveCapacity(scanned.records.count) }
        // A sweep still lists an unchanged page's ids (its records are what they were when
        // merged, and a page with a record that could not be stored has no digest).
        if unchanged, listsIDs { ids = scanned.records.compactMap(\.id) }
        for (position, record) in scanned.records.enumerated() where !unchanged && setup.feed?.headOnly != true {
            // A tombstone the API lists (deleted-when, a feed's deletion) deletes the row (or
            // marks it, by deletion =), whether or not it carries a version (Graph's `@removed`
            // entries carry only the id); a version it has still moves the high-water mark on.
            if let id = record.id, deletes(record, in: page.body) {
                changes.append(.delete(id: id))
                if ordered, let version = record.version, JSONCollectionCursor.isNewer(version, than: next.highWater) { next.highWater = version }
                continue
            }
            switch record.outcome(in: page.body, maxBytes: store.maxRecordBytes, position: position) {
            case .record(let remote):
                changes.append(.upsert(remote))
                bodyBytes += remote.body.count
                if setup.reconcile { ids.append(remote.id) }
                if ordered, JSONCollectionCursor.isNewer(remote.version, than: next.highWater) {
                    next.highWater = remote.version
                }
                // Sorted pages never go back below what this pass read on earlier pages (the
                // stored mark it started from says nothing of a sweep's order).
                if ordered, commitsPerPage, !warnedUnsorted, let passMark, number > 1,
                   JSONCollectionCursor.isNewer(passMark, than: remote.version) {
                    warnedUnsorted = true
                    setup.logger.warning("store \(store.name): pages are not sorted by \(setup.options.versionFieldName) (page \(number) has \(remote.version) after \(passMark)); sort the listing by it ascending (the URL's sort parameter), or a record updated while the pages are read can be missed",
                                         metadata: ["store": "\(store.name)", "url": "\(page.request.url.redactingUserInfo)"])
                }
                if ordered, JSONCollectionCursor.isNewer(remote.version, than: passMark) { passMark = remote.version }
            case .problem(let problem):
                problems.append(problem)
                if setup.reconcile, let id = problem.id { ids.append(id) }
            }
        }

        let total = number == 1 && !target.isReread ? setup.options.totalPath.flatMap { scanned.fields[$0]?.text }.flatMap { Int64($0) } : nil
        if let total { expectedTotal = total }
        if !target.isReread { recordsRead += scanned.recordCount }
        if restart != nil {
            // The next page is page 1 again: counts, loops and the page-1 total start afresh.
            recordsRead = 0
            expectedTotal = nil
            drift = ListingDrift()
            visited = []
            visitedCursors = []
        }
        if let reading = setup.feed {
            // A feed listed newest first is applied oldest first; one read from a start goes on
            // from its newest entry, the first of the newest page.
            if reading.feed.newestFirst { changes.reverse() }
            if let start = reading.feed.start, let first = scanned.records.first,
               let value = Self.value(at: start.field, in: page.body, range: first.elementRange) {
                next.delta = value
            }
        }
        if isLast, rateLimit == nil, let start = setup.options.deltaStart, let text = scanned.fields[start.path]?.text, !text.isEmpty {
            // Where the next pass starts, from the chain's last page.
            switch start {
            case .link: next.delta = LinkHeader.resolve(text, against: page.url).map(store.query.removingSecrets)
            case .token: next.delta = text
            }
        }
        if isLast, chainLength == 1 {
            // Validators stand for the whole collection only when it is one page: a 304 for
            // page 1 says nothing of page 300, nor of the pages after a page 1 that exhausted
            // the rate limit.
            next.firstURL = setup.firstURL
            next.etag = page.head.headers["ETag"]
            next.lastModified = page.head.headers["Last-Modified"]
        }
        var scannedPage = ScannedPage(number: number, changes: changes, problems: problems, ids: ids, bodyBytes: bodyBytes,
                                      totalHint: total, origin: page.request.url.redactingUserInfo, cursor: next,
                                      isLast: isLast, rateLimit: rateLimit, requests: loader.requestCount)
        scannedPage.digest = problems.isEmpty ? digest : nil
        // A page read again was counted as unchanged already.
        scannedPage.unchangedRecords = unchanged && !target.isReread ? scanned.recordCount : 0
        scannedPage.restartsListing = restart != nil
        if isLast, rateLimit == nil {
            scannedPage.endsChainAt = chainLength
            scannedPage.listingUnchanged = vouched
        }
        if isLast, rateLimit == nil, let moved = drift.moved {
            scannedPage.gaps.append(.listingMoved(detail: moved + (restarts > 0 ? ", read \(restarts + 1) times" : "")))
        }
        if isLast, rateLimit == nil, let expectedTotal, recordsRead < expectedTotal {
            let path = setup.options.totalPath ?? "total-path"
            scannedPage.gaps.append(.paginationEndedEarly(
                read: recordsRead, expected: Int(expectedTotal),
                hint: "page 1 said \(path) = \(expectedTotal) and no page linked further (check pagination =)"))
        }
        unconsumed += records
        if isLast {
            end(with: .page(scannedPage))
        } else {
            deliver(.page(scannedPage))
        }
    }

    /// Whether the page says another follows (`has-more-path`); nil when it does not say.
    private func saysMore(_ scanned: JSONPage) -> Bool? {
        guard let path = setup.options.hasMorePath, let text = scanned.fields[path]?.text else { return nil }
        return (text == "true") != setup.options.hasMoreNegated
    }

    /// Whether a listing read by position ends with this page: where the page says so
    /// (`has-more-path`, which wins), else at an empty page or once `reachedTotal`.
    private func positionalListingEnds(_ scanned: JSONPage, reachedTotal: Bool) -> Bool {
        if let more = saysMore(scanned) { return !more }
        return scanned.recordCount == 0 || reachedTotal
    }

    /// How many pages the listing has, by `total-pages-path` or the headers APIs use.
    private func totalPages(_ page: HTTPPageLoader.Page, _ scanned: JSONPage) -> Int? {
        if let path = setup.options.totalPagesPath, let text = scanned.fields[path]?.text { return Int(text) }
        for header in ["X-Total-Pages", "X-WP-TotalPages"] {
            if let text = page.head.headers[header], let pages = Int(text.trimmingCharacters(in: .whitespaces)) { return pages }
        }
        return nil
    }

    /// The next page's URL (and, for `body:` pagination, the cursor its body carries), nil at
    /// the end of the chain. Positional styles end where the page
    /// says so (`has-more-path`), at the total (pages, or records for an offset), or at an
    /// empty page; never at a short one, since servers cap the page size below what is asked.
    private func nextPage(after page: HTTPPageLoader.Page, _ scanned: JSONPage, number: Int) -> Result<(url: String, cursor: String?)?, SyncError> {
        var target: String?
        var cursor: String?
        let options = setup.options
        switch options.pagination {
        case .singlePage:
            return .success(nil)
        case .pageNumber(let param):
            let last = totalPages(page, scanned).map { number >= $0 } ?? false
            if positionalListingEnds(scanned, reachedTotal: last) { return .success(nil) }
            target = URLQuery.setting(param, to: String(options.firstPage + number), in: setup.firstURL)
        case .offset(let param):
            let read = recordsRead + scanned.recordCount
            let total = options.totalPath.flatMap { scanned.fields[$0]?.text }.flatMap { Int($0) }
            if positionalListingEnds(scanned, reachedTotal: total.map { read >= $0 } ?? false) { return .success(nil) }
            target = URLQuery.setting(param, to: String(read), in: setup.firstURL)
        case .bodyOffset:
            let read = recordsRead + scanned.recordCount
            let total = options.totalPath.flatMap { scanned.fields[$0]?.text }.flatMap { Int($0) }
            if positionalListingEnds(scanned, reachedTotal: total.map { read >= $0 } ?? false) { return .success(nil) }
            target = setup.firstURL
            cursor = String(read)
        case .beforeFirst(let param, let field):
            // Newest first, read toward newer entries: the next page is the one before this
            // page's first entry.
            if saysMore(scanned) == false { return .success(nil) }
            guard let first = scanned.records.first, let value = Self.value(at: field, in: page.body, range: first.elementRange) else {
                return .success(nil)
            }
            target = URLQuery.setting(param, to: value, in: setup.firstURL)
        case .afterLast(let param, let field):
            if saysMore(scanned) == false { return .success(nil) }
            guard let last = scanned.records.last,
                  let value = field == options.idField ? last.id : last.version, !value.isEmpty else { return .success(nil) }
            target = URLQuery.setting(param, to: value, in: setup.firstURL)
        case .headerCursor(let param, let header):
            guard let token = page.head.headers[header], !token.isEmpty else { return .success(nil) }
            target = URLQuery.setting(param, to: token, in: setup.firstURL)
        case .link:
            if saysMore(scanned) == false { return .success(nil) }
            target = LinkHeader.target(rel: "next", in: page.head.headers.values(for: "Link"), base: page.url)
        case .nextURL(let path):
            // An API that hands out a next URL on its last page too (Zendesk's after_url, for
            // polling later) says where the listing ends: `has-more-path = !end_of_stream`.
            if saysMore(scanned) == false { return .success(nil) }
            if let text = scanned.fields[path]?.text, !text.isEmpty {
                target = LinkHeader.resolve(text, against: page.url)
                if target == nil { return .failure(malformed(page, "next URL \(text.debugDescription) at \(path) is not a URL")) }
            }
        case .cursor(let param, let path):
            if saysMore(scanned) == false { return .success(nil) }
            if let token = scanned.fields[path]?.text, !token.isEmpty {
                target = URLQuery.setting(param, to: token, in: setup.firstURL)
            }
        case .bodyCursor(let path):
            // The same URL, asked with the token in the body; `has_more: false` or no token ends it.
            if saysMore(scanned) == false { return .success(nil) }
            if let token = scanned.fields[path]?.text, !token.isEmpty {
                target = setup.firstURL
                cursor = token
            }
        }
        // A link the server built from the request's URL echoes the configured secrets; the
        // loader adds them again to what it sends.
        guard let target = target.map(store.query.removingSecrets) else { return .success(nil) }
        // A page that points back into the chain would loop forever.
        // A POST API asks every page at one URL: there the cursors must not repeat.
        if let cursor {
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
        return .success((target, cursor))
    }

    /// Field names APIs use for the next page, looked for when the configured one is absent.
    static let commonNextFields = ["next", "next_url", "nextUrl", "next_page", "nextPage", "next_page_url", "links.next",
                                   "meta.next", "paging.next", "pagination.next", "@odata\\.nextLink", "next_cursor", "nextCursor",
                                   "cursor", "meta.next_cursor", "response_metadata.next_cursor"]

    /// What page 1 shows to be wrong with the configuration, in words: no record has the id or
    /// version field, or the next-page field is missing while another one is there. Tombstones
    /// (`deleted-when`) say nothing of the version field: APIs list a deleted record by its id
    /// alone (Graph's `@removed` entries, Google's cancelled events), and a page may hold nothing
    /// else.
    static func misconfiguration(_ page: JSONPage, options: JSONCollectionOptions, isTombstone: (JSONScannedRecord) -> Bool = { _ in false }) -> String? {
        let records = page.records.filter { !($0.id != nil && isTombstone($0)) }
        if !records.isEmpty {
            let reasons = records.compactMap(\.problem?.reason)
            if reasons.count == records.count, reasons.allSatisfy({ $0.hasPrefix("record has no id") }) {
                return "id-field \(options.idField) matches none of the \(records.count) records of page 1; set id-field = to the records' id field"
            }
            if reasons.count == records.count, reasons.allSatisfy({ $0.hasPrefix("record has no version") }) {
                return "version-field \(options.versionFieldName) matches none of the \(records.count) records of page 1; set version-field = to a field that changes with every update (or none, when the records have no such field)"
            }
        }
        let configured: String
        switch options.pagination {
        case .nextURL(let path), .cursor(_, let path), .bodyCursor(let path): configured = path
        case .link, .singlePage, .pageNumber, .offset, .afterLast, .headerCursor, .beforeFirst, .bodyOffset: return nil
        }
        guard page.fields[configured] == nil else { return nil }
        let present = commonNextFields.filter { $0 != configured && page.fields[$0]?.text?.isEmpty == false }
        guard let other = present.first else { return nil }
        return "pagination names \(configured), which page 1 does not have, but it has \(other): set pagination = \(options.paginationSpec(path: other))"
    }

    /// A page 1 of the wrong shape for `records-path`, said as the configuration to fix: an
    /// object where the records array was expected names its members that hold arrays.
    /// The messages of a page's top-level `errors` array (GraphQL's error form), if it has one.
    static func reportedErrors(_ body: Data) -> String? {
        guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
              let errors = object["errors"] as? [Any], !errors.isEmpty else { return nil }
        let messages = errors.map { error in ((error as? [String: Any])?["message"] as? String) ?? "\(error)" }
        return StoreStatus.shorten(messages.joined(separator: "; "), to: 300)
    }

    static func recordsPathProblem(_ body: Data, options: JSONCollectionOptions) -> String? {
        guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any] else { return nil }
        var found: [String] = []
        func look(_ value: [String: Any], prefix: String) {
            for (key, member) in value.sorted(by: { $0.key < $1.key }) {
                if member is [Any] { found.append(prefix + key) } else if let inner = member as? [String: Any], prefix.isEmpty { look(inner, prefix: key + ".") }
            }
        }
        look(object, prefix: "")
        let current = options.recordsPath.isEmpty ? "records-path is not set, so the page itself should be the array"
            : "records-path = \(options.recordsPath) is not an array here"
        guard let first = found.first else { return "page 1 is a JSON object with no array of records: \(current)" }
        return "page 1 is a JSON object and \(current): set records-path = \(first)"
            + (found.count > 1 ? " (arrays here: \(found.joined(separator: ", ")))" : "")
    }

    /// Whether `record` of a page is a deletion: a tombstone the store's listing marks
    /// (`deleted-when`, on the record), or a feed's deletion (on the feed's entry).
    private func deletes(_ record: JSONScannedRecord, in body: Data) -> Bool {
        if let reading = setup.feed {
            let entry = record.elementRange
            return reading.feed.deletes(entry: body[(body.startIndex + entry.lowerBound)..<(body.startIndex + entry.upperBound)])
        }
        guard let test = setup.options.deletedWhen else { return false }
        return test.matches(body[(body.startIndex + record.range.lowerBound)..<(body.startIndex + record.range.upperBound)])
    }

    /// The scalar at `path` inside the JSON object at `range` of `body`, as text.
    static func value(at path: String, in body: Data, range: Range<Int>) -> String? {
        let bytes = body[(body.startIndex + range.lowerBound)..<(body.startIndex + range.upperBound)]
        guard var node = try? JSONDecoder().decode(JSONValue.self, from: bytes) else { return nil }
        for part in JSONPath.components(path) {
            guard case .object(let members) = node, let next = members[part] else { return nil }
            node = next
        }
        switch node {
        case .string(let text): return text
        case .integer(let number): return String(number)
        case .number(let number): return String(number)
        case .bool, .null, .array, .object: return nil
        }
    }

    private func malformed(_ page: HTTPPageLoader.Page, _ message: String) -> SyncError {
        SyncError(.malformedResponse, store: store.name, url: page.request.url, message: message)
    }
}
