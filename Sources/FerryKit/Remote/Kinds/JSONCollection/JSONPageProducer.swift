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
/// Each page goes through the same steps, each a part of its own: the answer's status (a 304,
/// an expired start, an error), the scan and what page 1 shows of the configuration
/// (``JSONPageDiagnosis``), whether the listing moved (``ListingDrift``), the next page
/// (``JSONPageChain``; a sweep's counted pages, ``ListingVouch``), and what the records give
/// the pass (``PageHarvest``, ``VersionMarks``).
///
/// Memory stays bounded: after handing over `maxUnconsumedRecords` records the pass has not
/// yet taken, the producer waits before requesting the next page (``consumed(_:)`` resumes it).
/// Everything here runs on the producer's own loop; the only shared things are the immutable
/// configuration and the events, which are values.
final class JSONPageProducer: RunLoopOperation<Void, Never>, @unchecked Sendable {
    /// A page to request: the chain's next, or one a sweep counted and now reads for its ids.
    struct Target {
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

    /// A listing that moved is read again from page 1 this often before the pass says it is
    /// incomplete: each read that moves costs a whole listing, and an API busy enough to move
    /// every one is left to the next pass.
    static let maxRestarts = 2

    private let setup: Setup
    private let deliver: @Sendable (Event) -> Void
    /// Touched only on the producer's thread, from here on.
    private var state = State.idle
    private var loader: HTTPPageLoader?
    private var next: JSONCollectionCursor
    private var marks: VersionMarks
    private var chain: JSONPageChain
    private var vouch: ListingVouch<Target>
    /// For pages asked for by position (``JSONCollectionOptions/Pagination/isPositional``):
    /// what the listing read so far shows of its moving, and how often it was read again.
    private var drift = ListingDrift()
    private var restarts = 0
    /// Page 1's ids, for a listing read by position: a page 2 that repeats them shows the
    /// server ignored the page parameter.
    private var firstPageIDs: [String] = []
    private var warnedOtherOrigin = false
    private var unconsumed = 0

    /// `deliver` is called on the producer's thread; it must hand the event to the pass's loop.
    init(_ setup: Setup, deliver: @escaping @Sendable (Event) -> Void) {
        self.setup = setup
        self.deliver = deliver
        self.next = setup.cursor
        self.marks = VersionMarks(highWater: setup.cursor.highWater)
        self.chain = JSONPageChain(options: setup.options, firstURL: setup.firstURL, store: setup.store)
        self.vouch = ListingVouch(vouched: setup.reconcile && setup.listingAtRest)
        // A producer stopped by its pass has done what was asked of it: its pass decides.
        super.init(cancelled: .success(()))
        name = "ferry-json-pages-\(setup.store.name)"
    }

    private var store: StoreConfiguration { setup.store }
    private var options: JSONCollectionOptions { setup.options }
    /// Pages sorted by version, each committing the mark (``JSONCollectionSource``).
    private var commitsPerPage: Bool { options.updatedParam != nil && !options.pagination.isPositional }

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
        chain.asked(target.request.url)
        loader.load(target.request, configuredQuery: target.credentials) { [weak self] result in
            self?.received(result)
        }
    }

    private func end(with event: Event) {
        loader?.cancel()
        state = .done
        deliver(event)
        finish(.success(()))
    }

    // MARK: A page

    private func received(_ result: Result<HTTPPageLoader.Page, TransferError>) {
        guard case .loading(let target) = state, let loader else { return }
        let number = target.number
        let page: HTTPPageLoader.Page
        switch result {
        case .failure(let error): return end(with: .failed(SyncError(error, store: store, position: "page \(number)")))
        case .success(let loaded): page = loaded
        }
        if let event = answerWithoutRecords(page, target: target) { return end(with: event) }
        let digest = setup.digestSeed.map { PageDigest(page: number, value: PageDigest.of(url: page.request.url, body: page.body, seed: $0)) }
        // The same bytes at the same place as when last merged: the same records, merged then.
        let unchanged = digest.map { setup.knownDigests[number] == $0.value } ?? false
        vouch.page(target, unchanged: unchanged)
        // Of an unchanged page a sweep needs the ids, and a pass between sweeps only the count.
        let listsIDs = setup.reconcile && !vouch.vouched
        let scanned: JSONPage
        switch scan(page, target: target, unchanged: unchanged, listsIDs: listsIDs) {
        case .failure(let error): return end(with: .failed(error))
        case .success(let result): scanned = result
        }
        if let event = feedOutrunsPage1(page, scanned, target: target) { return end(with: event) }
        let step: Step
        switch self.step(after: page, scanned, target: target) {
        case .failure(let error): return end(with: .failed(error))
        case .success(let decided): step = decided
        }
        // The next page is requested before this one's records are built, so its transfer
        // overlaps that work instead of following it (a page's round trip was a quarter of
        // this thread's time on loopback), unless the pass is behind.
        let records = unchanged ? 0 : scanned.records.count
        if let following = step.following {
            if unconsumed + records < setup.maxUnconsumedRecords { load(following) } else { state = .paused(following) }
        }
        var harvest = unchanged || setup.feed?.headOnly == true ? PageHarvest() : harvestRecords(of: page, scanned, number: number)
        // A sweep still lists an unchanged page's ids (its records are what they were when
        // merged, and a page with a record that could not be stored has no digest).
        if unchanged, listsIDs { harvest.ids = scanned.records.compactMap(\.id) }
        let total = target.isReread ? nil : chain.count(scanned, number: number)
        if step.restart != nil {
            chain.restart()
            drift = ListingDrift()
        }
        var scannedPage = describe(page, scanned, harvest: harvest, step: step, target: target, requests: loader.requestCount)
        scannedPage.totalHint = total
        scannedPage.digest = harvest.problems.isEmpty ? digest : nil
        // A page read again was counted as unchanged already.
        scannedPage.unchangedRecords = unchanged && !target.isReread ? scanned.recordCount : 0
        unconsumed += records
        if step.following == nil { end(with: .page(scannedPage)) } else { deliver(.page(scannedPage)) }
    }

    /// The event for an answer with no records to read, if it is one: a 304 for page 1, a
    /// start the API expired, an error status.
    private func answerWithoutRecords(_ page: HTTPPageLoader.Page, target: Target) -> Event? {
        let status = page.head.status
        let number = target.number
        if status == 304, number == 1, !target.isReread, !target.isRestart {
            return .notModified(requests: loader?.requestCount ?? 0)
        }
        // The API expired its delta start (Google's 410, Graph's syncStateNotFound), or no
        // longer knows a feed's start (Stripe's 400 resource_missing past its 30 days of events):
        // the start is forgotten, and the source lists everything and sweeps what went.
        let expiredStatuses: Set<Int> = setup.feed == nil ? [410] : [400, 404, 410]
        if expiredStatuses.contains(status), number == 1, setup.startsFromDelta {
            let what = setup.feed == nil ? "the delta start" : "the change feed's start"
            return .page(startLost(page, reason: "the API expired \(what) (HTTP \(status))"))
        }
        guard (200..<300).contains(status) else {
            return .failed(page.statusError(target: number == 1 ? .configuredURL : .derivedURL, position: "page \(number)",
                                            context: setup.errorContext))
        }
        return nil
    }

    /// The last page of a read whose start is lost: nothing of it applies, and the source
    /// lists everything instead.
    private func startLost(_ page: HTTPPageLoader.Page, reason: String) -> ScannedPage {
        var lost = ScannedPage(number: 1, changes: [], problems: [], ids: [], bodyBytes: 0, totalHint: nil,
                               origin: page.request.url.redactingUserInfo, cursor: JSONCollectionCursor(highWater: next.highWater),
                               isLast: true, rateLimit: nil, requests: loader?.requestCount ?? 0)
        lost.startExpired = true
        lost.gaps = [.sweepSkipped(reason: reason)]
        return lost
    }

    /// The page scanned as much as the pass needs of it, or why it cannot be: the API's own
    /// errors (GraphQL's, RATE_LIMITED among them), a records path the page does not have,
    /// malformed JSON, a page 1 that shows the configuration wrong.
    private func scan(_ page: HTTPPageLoader.Page, target: Target, unchanged: Bool, listsIDs: Bool) -> Result<JSONPage, SyncError> {
        let number = target.number
        // A listing read by position needs every page's ids to notice that it moved.
        var detail: JSONRecordScanner.Detail = unchanged ? (listsIDs || options.pagination.isPositional ? .ids : .count) : .records
        // The next page is asked for after the last record: its id (or version) is needed.
        if case .afterLast(_, let field) = options.pagination, detail != .records {
            detail = field == options.idField ? .ids : .records
        }
        let scanned: JSONPage
        do {
            scanned = try setup.scanner.scan(page.body, detail: detail)
        } catch {
            // A GraphQL API answers a query it cannot run with 200 and `errors` instead of data.
            // GitHub's GraphQL API says RATE_LIMITED this way too: waited out like a 429.
            if error.kind == .shape, let errors = JSONPageDiagnosis.reportedErrors(page.body) {
                let limited = HTTPStatusClassifier.namesRateLimit(page.body)
                return .failure(SyncError(limited ? .rateLimited : .remote(code: "errors"), store: store.name, url: page.request.url,
                                          position: "page \(number)",
                                          message: (limited ? "rate limited: " : "the API answered with errors instead of records: ") + errors,
                                          retryAfter: limited ? HTTPStatusClassifier.retryAfter(page.head.headers) : nil))
            }
            if error.kind == .shape, number == 1, let problem = JSONPageDiagnosis.recordsPathProblem(page.body, options: options) {
                return .failure(SyncError(.configuration, store: store.name, url: page.request.url, position: "page 1", message: problem))
            }
            return .failure(page.malformedJSON(error, store: store.name))
        }
        if number == 1, !target.isReread, setup.feed?.headOnly != true,
           let problem = JSONPageDiagnosis.misconfiguration(scanned, options: options, isTombstone: { self.deletes($0, in: page.body) }) {
            return .failure(SyncError(.configuration, store: store.name, url: page.request.url, position: "page 1", message: problem))
        }
        return .success(scanned)
    }

    /// A feed read from no start (it was empty when the store was listed) whose newest page
    /// says older entries follow: those are behind page 1, not before it, and a feed walked
    /// toward newer entries cannot reach them. The source lists everything instead.
    private func feedOutrunsPage1(_ page: HTTPPageLoader.Page, _ scanned: JSONPage, target: Target) -> Event? {
        guard case .beforeFirst = options.pagination, setup.feed?.headOnly == false, !setup.startsFromDelta, target.number == 1,
              chain.saysMore(scanned) == true else { return nil }
        return .page(startLost(page, reason: "the change feed gained more than a page of entries while it had no start"))
    }

    /// What comes after a page.
    private struct Step {
        /// The page to request next; nil: this page is the last.
        var following: Target?
        /// The next page is page 1 again: the listing moved (``ListingDrift``).
        var restart: Target?
        /// The page exhausted the rate limit: the pass fails with it once the page is merged.
        var rateLimit: SyncError?
    }

    /// The next page: the chain's, page 1 again for a listing that moved, or a counted page a
    /// sweep reads again; none after a page that exhausted the rate limit.
    private func step(after page: HTTPPageLoader.Page, _ scanned: JSONPage, target: Target) -> Result<Step, SyncError> {
        let number = target.number
        if options.pagination.isPositional, !target.isReread {
            let totals = ListingDrift.totalHeaders.compactMap { name in page.head.headers[name].map { (name, $0.trimmingCharacters(in: .whitespaces)) } }
                + (options.totalPath.flatMap { path in scanned.fields[path]?.text.map { (path, $0) } }.map { [$0] } ?? [])
            let ids = scanned.records.compactMap(\.id)
            if number == 1 { firstPageIDs = ids }
            if number == 2, let problem = JSONPageDiagnosis.ignoredPositionParameter(page1: firstPageIDs, page2: ids, options: options) {
                return .failure(SyncError(.configuration, store: store.name, url: page.request.url, position: "page 2", message: problem))
            }
            drift.note(page: number, ids: ids, totals: totals)
        }
        var following: (url: String, cursor: String?)?
        if !target.isReread {
            switch chain.next(after: page, scanned, number: number) {
            case .failure(let error): return .failure(error)
            case .success(let next): following = next
            }
        }
        var step = Step()
        if !target.isReread, following == nil {
            step.restart = restartIfMoved()
            if step.restart == nil { vouch.chainEnded(at: number, knownPages: setup.knownDigests.count) }
        }
        if (following != nil || vouch.hasRereads) && HTTPStatusClassifier.isRateLimitExhausted(page.head.headers) {
            step.rateLimit = SyncError(.rateLimited, store: store.name, url: page.request.url, position: "page \(number)",
                                       message: "rate limit exhausted (X-RateLimit-Remaining: 0)",
                                       retryAfter: HTTPStatusClassifier.retryAfter(page.head.headers))
            return .success(step)
        }
        if let restart = step.restart {
            step.following = restart
        } else if let following {
            let credentials = mayCarryCredentials(following.url)
            let request = Self.request(url: following.url, headers: credentials ? setup.headers : setup.publicHeaders, options: options,
                                       cursor: following.cursor, since: setup.since)
            step.following = Target(number: number + 1, request: request, credentials: credentials)
        } else if var reread = vouch.nextReread() {
            reread.isReread = true
            step.following = reread
        }
        return .success(step)
    }

    /// At the end of a listing read by position that moved: page 1 to read it again from, with
    /// the same filter (what was read is merged, an upsert is an upsert; what the move may
    /// have skipped is found by the new read), while reads remain.
    private func restartIfMoved() -> Target? {
        guard options.pagination.isPositional else { return nil }
        drift.end(totalNamed: ["X-WP-Total", "X-Total", "X-Total-Count"] + (options.totalPath.map { [$0] } ?? []))
        guard let moved = drift.moved, restarts < Self.maxRestarts else { return nil }
        restarts += 1
        setup.logger.notice("store \(store.name): the listing moved while it was read page by page (\(moved)); reading it again from page 1 (\(restarts) of \(Self.maxRestarts))",
                            metadata: ["store": "\(store.name)"])
        var request = setup.firstRequest
        request.headers.remove("If-None-Match")
        request.headers.remove("If-Modified-Since")
        vouch.abandon()
        return Target(number: 1, request: request, credentials: true, isRestart: true)
    }

    /// The changes changed page `number` gives, and the marks its versions move.
    private func harvestRecords(of page: HTTPPageLoader.Page, _ scanned: JSONPage, number: Int) -> PageHarvest {
        var harvest = PageHarvest(scanned, body: page.body, maxRecordBytes: store.maxRecordBytes, listsIDs: setup.reconcile) {
            self.deletes($0, in: page.body)
        }
        // Digest versions (version-field = none) have no order: no mark to keep.
        if options.versionField != nil, let (version, after) = marks.note(harvest, page: number, expectsSorted: commitsPerPage) {
            setup.logger.warning("store \(store.name): pages are not sorted by \(options.versionFieldName) (page \(number) has \(version) after \(after)); sort the listing by it ascending (the URL's sort parameter), or a record updated while the pages are read can be missed",
                                 metadata: ["store": "\(store.name)", "url": "\(page.request.url.redactingUserInfo)"])
        }
        next.highWater = marks.highWater
        if let reading = setup.feed {
            // A feed listed newest first is applied oldest first; one read from a start goes on
            // from its newest entry, the first of the newest page.
            if reading.feed.newestFirst { harvest.changes.reverse() }
            if let start = reading.feed.start, let first = scanned.records.first,
               let value = JSONPageDiagnosis.value(at: start.field, in: page.body, range: first.elementRange) {
                next.delta = value
            }
        }
        return harvest
    }

    /// The page as the pass gets it, with the cursor as it stands after it and, on the last
    /// page, where the next pass starts and what the listing left out.
    private func describe(_ page: HTTPPageLoader.Page, _ scanned: JSONPage, harvest: PageHarvest, step: Step, target: Target,
                          requests: Int) -> ScannedPage {
        let isLast = step.following == nil
        if let reading = setup.feed, reading.headOnly, let start = reading.feed.start, let first = scanned.records.first,
           let value = JSONPageDiagnosis.value(at: start.field, in: page.body, range: first.elementRange) {
            // A head reads where the feed stands: its newest entry.
            next.delta = value
        }
        if isLast, step.rateLimit == nil, let start = options.deltaStart, let text = scanned.fields[start.path]?.text, !text.isEmpty {
            // Where the next pass starts, from the chain's last page.
            switch start {
            case .link: next.delta = LinkHeader.resolve(text, against: page.url).map(store.query.removingSecrets)
            case .token: next.delta = text
            }
        }
        if isLast, vouch.chainLength == 1 {
            // Validators stand for the whole collection only when it is one page: a 304 for
            // page 1 says nothing of page 300, nor of the pages after a page 1 that exhausted
            // the rate limit.
            next.firstURL = setup.firstURL
            next.etag = page.head.headers["ETag"]
            next.lastModified = page.head.headers["Last-Modified"]
        }
        var described = ScannedPage(number: target.number, changes: harvest.changes, problems: harvest.problems, ids: harvest.ids,
                                    bodyBytes: harvest.bodyBytes, totalHint: nil, origin: page.request.url.redactingUserInfo, cursor: next,
                                    isLast: isLast, rateLimit: step.rateLimit, requests: requests)
        described.restartsListing = step.restart != nil
        if isLast, step.rateLimit == nil {
            described.endsChainAt = vouch.chainLength
            described.listingUnchanged = vouch.vouched
            if let moved = drift.moved {
                described.gaps.append(.listingMoved(detail: moved + (restarts > 0 ? ", read \(restarts + 1) times" : "")))
            }
            if let shortfall = chain.shortfall { described.gaps.append(shortfall) }
        }
        return described
    }

    // MARK: Records and origins

    /// Whether `record` of a page is a deletion: a tombstone the store's listing marks
    /// (`deleted-when`, on the record), or a feed's deletion (on the feed's entry).
    private func deletes(_ record: JSONScannedRecord, in body: Data) -> Bool {
        if let reading = setup.feed {
            let entry = record.elementRange
            return reading.feed.deletes(entry: body[(body.startIndex + entry.lowerBound)..<(body.startIndex + entry.upperBound)])
        }
        guard let test = options.deletedWhen else { return false }
        return test.matches(body[(body.startIndex + record.range.lowerBound)..<(body.startIndex + record.range.upperBound)])
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
}
