import Foundation
import Logging

/// A paginated JSON collection (GitHub style, Datasette style, or a chain of file:// pages).
///
/// A pass starts at the store URL (plus `<page-size-param>=N`, and `<updated-param>=<high-water
/// mark>` on an incremental pass) and follows the configured pagination until it ends.
///
/// **Cursor.** The cursor holds the highest version seen and the first page's ETag /
/// Last-Modified. When `updated-param` is set the collection must be sorted by the version,
/// ascending (Datasette `_sort=updated_at`, GitHub `sort=updated&direction=asc`): then every batch
/// commits the high-water mark so far, and an interrupted (or rate-limited) pass resumes where it
/// stopped. Without `updated-param` the order is unknown, so only the final page carries the
/// cursor: a mark committed from a half-read unsorted collection could skip records forever.
/// The filter is "newer than the mark": a record written later with exactly the mark's version
/// would be missed, which is why versions should be fine-grained timestamps or revisions.
///
/// **Conditional requests.** The first request of a pass that is not reconciling sends
/// If-None-Match / If-Modified-Since when the stored validators belong to the same URL; a 304
/// ends the pass as unchanged after one request.
///
/// **Reconciliation.** With `plan.reconcile` the pass lists everything (no updated filter, no
/// validators), hands every id to `didList` before the batch holding it; the listing is complete
/// only if the whole chain was read. A sweep whose pages are those the last one listed
/// (`plan.listingAtRest`) counts each page that comes back with the same bytes instead of
/// listing it; at the first page that differs, or a chain of another length, it lists every
/// page from there and then reads the counted ones again for their ids.
///
/// **Threads and batches.** A ``JSONPageProducer`` fetches and scans pages on a thread of its
/// own while the sink merges on the pass's loop, staying at most ``batchTarget`` records ahead.
/// The source gathers consecutive pages into one batch of about ``batchTarget`` records (a page
/// with bad records goes alone, so problem positions stay page positions), because a large
/// transaction merges new records much faster than one per page. `ferry-bench json-e2e`
/// measures the effect. A pass that fails on a page first hands over the complete pages held.
public final class JSONCollectionSource: RemoteSource {
    private enum State {
        case idle
        case paging(sink: any RemoteSourceSink, producer: JSONPageProducer)
        case done
    }

    private let store: StoreConfiguration
    private let logger: Logger
    private let options: JSONCollectionOptions
    private let scanner: JSONRecordScanner
    private let headers: HTTPHeaders
    /// ``headers`` without credentials (pages on another origin).
    private let publicHeaders: HTTPHeaders
    private var state = State.idle
    private var plan = PassPlan(cursor: nil, reconcile: false)
    /// The cursor the pass started from, and the one it has reached (the store's listing and
    /// its feed each move their own part).
    private var stored = JSONCollectionCursor()
    private var cursor = JSONCollectionCursor()
    /// The legs still to run, the one running, and what the finished ones said.
    private var legs: [Leg] = []
    private var leg = Leg.listing
    private var legRequests = 0
    private var legGaps: [ReplicaGap] = []
    private var listingRan = false
    private var listingUnchanged = false
    private var legsUnchanged = true
    /// The API expired the start this pass read from (a delta link, a sync token, a feed's
    /// start): the pass lists everything instead, and sweeps.
    private var relisting = false
    /// Whether the store's listing leg lists every record and its ids (a sweep).
    private var listsEverything: Bool { plan.reconcile || relisting }
    /// Pages scanned but not yet handed over, merged into one batch (see ``batchTarget``).
    private var pending = PendingBatch()

    /// Records gathered from consecutive pages before they go to the sink as one batch.
    ///
    /// Why: the merge commits one transaction per batch, and on this machine a 1,000-row
    /// transaction inserts new random ids at about two thirds of the rate of a 10,000-row one
    /// (NOTES; `ferry-bench json-e2e`). APIs cap pages at 100–1,000 records, so a page is too
    /// small a transaction for a first sync. Merging pages changes nothing a pass promises: the
    /// batch carries the cursor of its last page, and a failed page still hands over the good
    /// pages before it. ``maxBatchDelay`` keeps slow APIs committing page by page.
    var batchTarget = 10_000
    /// ``batchTarget`` while the pass spools (``PassPlan/spooled``): 2,500 records ahead of
    /// the spool cost 7 MB less of a 1M first sync's peak, and no time.
    static let spooledBatchTarget = 2_500
    /// Bytes of record bodies gathered before a batch goes out regardless of ``batchTarget``,
    /// so large records keep memory bounded.
    var batchByteLimit = 16 << 20
    /// A batch goes out once its first page has waited this long, so a slow or rate-limited
    /// API still commits (and shows progress) page by page.
    var maxBatchDelay: Duration = .milliseconds(500)

    /// A source for one pass of `context.store`, whose options were checked at load time.
    init(_ context: RemoteSourceContext, options: JSONCollectionOptions) {
        store = context.store
        logger = context.logger
        self.options = options
        scanner = JSONRecordScanner(layout: options.recordLayout(recordsPath: options.recordsPath, fieldPaths: options.fieldPaths))
        var headers = HTTPHeaders()
        headers.set("Accept", "application/json")
        var plain = store.headers
        plain.fields.removeAll { $0.secret != nil }
        plain.apply(to: &headers)
        publicHeaders = headers
        if let authorization = options.authentication.authorization {
            headers.set("Authorization", authorization)
        }
        store.headers.apply(to: &headers)
        self.headers = headers
    }

    /// Whether each page commits the cursor (pages sorted by version) or only the last one.
    /// A listing read by position commits only at its end: a record its moving skipped is
    /// older than the marks of the pages after it, and a committed mark past it would lose it.
    private var commitsPerPage: Bool { options.updatedParam != nil && !options.pagination.isPositional }

    public func start(_ plan: PassPlan, sink: any RemoteSourceSink) {
        guard case .idle = state else { preconditionFailure("JSONCollectionSource started twice") }
        self.plan = plan
        if plan.spooled { batchTarget = min(batchTarget, Self.spooledBatchTarget) }
        if let text = plan.cursor {
            if let cursor = JSONCollectionCursor(stored: text) {
                stored = cursor
            } else {
                logger.warning("stored cursor is not a JSON collection cursor; syncing everything", metadata: ["store": "\(store.name)"])
            }
        }
        cursor = stored
        legs = Self.legs(plan: plan, stored: stored, options: options)
        if legs.first == .head, !plan.reconcile, plan.cursor != nil {
            // A changes feed whose start was lost cannot say what changed: this pass lists
            // everything, and sweeps what went meanwhile.
            relisting = true
        }
        startNextLeg(sink: sink)
    }

    /// The parts of a pass, in order (``JSONFeed``): the store's own listing, and around it a
    /// feed's head (where a changes feed stands, before a listing it will be read from) or the
    /// feed itself (what changed since the last pass).
    enum Leg: Equatable {
        case head
        case listing
        case feed
    }

    static func legs(plan: PassPlan, stored: JSONCollectionCursor, options: JSONCollectionOptions) -> [Leg] {
        guard let feed = options.feed else { return [.listing] }
        let full = plan.reconcile || plan.cursor == nil
        if feed.role == .changes, feed.start != nil, full || stored.feedStart == nil { return [.head, .listing] }
        if full { return [.listing] }
        // A changes feed stands in for a listing that cannot be asked what changed.
        let listingHasFilter = options.updatedParam != nil || options.sinceParam != nil || options.requestBody?.usesSince == true
            || options.deltaStart != nil
        return feed.role == .deletions || listingHasFilter ? [.listing, .feed] : [.feed]
    }

    /// Starts the next leg's producer, or ends the pass after the last one.
    private func startNextLeg(sink: any RemoteSourceSink) {
        guard !legs.isEmpty else {
            state = .done
            let complete = listsEverything && listingRan && legGaps.isEmpty
            sink.source(self, didFinishWith: SourceOutcome(listingComplete: complete, requests: legRequests, unchanged: legsUnchanged,
                                                           gaps: legGaps, listingUnchanged: complete && listingUnchanged))
            return
        }
        leg = legs.removeFirst()
        let setup: JSONPageProducer.Setup
        do {
            setup = try self.setup(for: leg)
        } catch {
            return failAtStart(unreadableMark: error.mark, sink: sink)
        }
        // Events are posted to this loop; the source is touched only here.
        let loop = RunLoopHandle.current()
        let box = LoopBoundSource(self)
        let producer = JSONPageProducer(setup) { event in
            loop.perform { box.source?.received(event) }
        }
        state = .paging(sink: sink, producer: producer)
        // The producer starts its own thread; its first event comes through the loop, never inside start.
        producer.start()
    }

    /// What one leg's producer reads: the store's listing as configured, or its feed.
    private func setup(for leg: Leg) throws(SinceValue.UnreadableMark) -> JSONPageProducer.Setup {
        let listing = leg == .listing ? options : options.feed!.listing
        var url = leg == .listing ? store.url : options.feed!.url
        var startsFromDelta = false
        var since = ""
        var mark = stored.highWater
        switch leg {
        case .listing:
            if let param = options.pageSizeParam { url = URLQuery.setting(param, to: String(options.pageSize), in: url) }
            // A delta start the API handed over supersedes the updated-after filter; a sweep
            // lists everything from the store's URL (and gets a fresh start at its end).
            let fromDelta = !listsEverything ? stored.delta.flatMap { delta in options.deltaStart.map { (delta, $0) } } : nil
            if let (delta, start) = fromDelta {
                switch start {
                case .link: url = delta
                case .token(let param, _): url = URLQuery.setting(param, to: delta, in: url)
                }
                startsFromDelta = true
            }
            (url, since) = try filtered(url, listing: listing, mark: fromDelta == nil && !listsEverything ? stored.highWater : nil)
        case .head:
            // The newest entry alone: where the feed stands now.
            if let param = listing.pageSizeParam { url = URLQuery.setting(param, to: "1", in: url) }
            mark = nil
        case .feed:
            let feed = options.feed!
            if let param = listing.pageSizeParam { url = URLQuery.setting(param, to: String(listing.pageSize), in: url) }
            if let start = feed.start, let from = stored.feedStart, !from.isEmpty {
                url = URLQuery.setting(start.param, to: from, in: url)
                startsFromDelta = true
            }
            mark = stored.feedMark
            (url, since) = try filtered(url, listing: listing, mark: stored.feedMark)
        }
        var request = JSONPageProducer.request(url: url, headers: headers, options: listing, cursor: nil, since: since)
        // A resync a person asked for reads everything, whatever the validators would say.
        if leg == .listing, !listsEverything, !plan.revalidate, stored.firstURL == url {
            if let etag = stored.etag { request.headers.set("If-None-Match", etag) }
            if let lastModified = stored.lastModified { request.headers.set("If-Modified-Since", lastModified) }
        }
        var pagination = listing
        if leg == .head { pagination.pagination = .singlePage }
        let layout: JSONRecordScanner.Layout
        if leg == .listing {
            layout = options.recordLayout(recordsPath: options.recordsPath, fieldPaths: options.fieldPaths)
        } else {
            layout = options.feed!.recordLayout(fieldPaths: pagination.fieldPaths)
        }
        // The mark never moves back within a store's life: a sweep starts from it too, since
        // the records of pages it skips unchanged (and of a sweep cut short) are older than it,
        // and a sweep that began at nothing stored `{}` after reading only unchanged pages, and a
        // lower mark when it failed halfway, after which every pass listed everything. A rebuild
        // (`ferry resync`, no stored cursor) starts afresh.
        var setup = JSONPageProducer.Setup(store: store, logger: logger, options: pagination, scanner: JSONRecordScanner(layout: layout),
                                           headers: headers, publicHeaders: publicHeaders,
                                           session: store.session, reconcile: listsEverything && leg == .listing, firstURL: url,
                                           firstRequest: request, cursor: JSONCollectionCursor(highWater: mark),
                                           maxUnconsumedRecords: batchTarget, errorContext: HTTPStatusClassifier.Context(store),
                                           digestSeed: store.writeBack.push || leg != .listing ? nil : PageDigest.seed([
                                               store.identity, options.recordsPath, options.idField, options.versionFieldName,
                                               String(store.maxRecordBytes),
                                           ]),
                                           knownDigests: leg == .listing ? plan.pageDigests : [:], listingAtRest: leg == .listing && plan.listingAtRest,
                                           startsFromDelta: startsFromDelta, since: since)
        if leg != .listing { setup.feed = JSONPageProducer.FeedReading(feed: options.feed!, headOnly: leg == .head) }
        return setup
    }

    /// `url` with the listing's incremental filter for `mark` (nil: everything), and `{since}`
    /// as the body template fills it.
    private func filtered(_ url: String, listing: JSONCollectionOptions, mark: String?) throws(SinceValue.UnreadableMark) -> (String, String) {
        var url = url
        if let param = listing.updatedParam, let mark {
            url = URLQuery.setting(param, to: try listing.since.render(mark), in: url)
        }
        // `{since}` in a parameter or the body: the mark on an incremental pass, the earliest
        // time (everything) on a sweep or a first sync.
        let usesSince = listing.sinceParam != nil || listing.requestBody?.usesSince == true
        let since = usesSince ? try listing.since.render(mark) : ""
        if let parameter = listing.sinceParam {
            url = URLQuery.setting(parameter.name, to: parameter.value(since), in: url)
        }
        return (url, since)
    }

    /// Fails the pass before its first request: the stored mark cannot be written as the
    /// filter wants it. Reported through the loop, as every outcome is, never inside start.
    private func failAtStart(unreadableMark mark: String, sink: any RemoteSourceSink) {
        let key = options.updatedParam != nil ? "updated-param" : options.sinceParam != nil ? "since-param" : "request-body"
        let error = SyncError(.configuration, store: store.name, url: store.url, message:
            "the mark \(mark.debugDescription) (the highest \(options.versionFieldName) seen) is not a time Ferry reads (ISO 8601, or seconds since 1970), "
            + "so \(key)'s {since} cannot be written with since-format and look-back; set version-field = to the API's update time, or since-format = as-is without look-back to send the value as the API wrote it")
        state = .done
        let box = LoopBoundSource(self)
        RunLoopHandle.current().perform { [sink = UncheckedSink(sink: sink)] in
            guard let source = box.source else { return }
            sink.sink.source(source, didFailWith: error)
        }
    }

    public func cancel() {
        if case .paging(_, let producer) = state { producer.cancel() }
        pending = PendingBatch()
        state = .done
    }

    // MARK: Pages

    private func received(_ event: JSONPageProducer.Event) {
        guard case .paging(let sink, let producer) = state else { return }
        switch event {
        case .notModified(let requests):
            // A 304 for the listing: unchanged, as the validators the last pass stored say.
            legRequests += requests
            startNextLeg(sink: sink)
        case .failed(let error):
            fail(error, sink: sink, producer: producer)
        case .page(let page):
            producer.consumed(page.changes.count + page.problems.count)
            // A page with bad records goes out on its own: problem positions are page positions,
            // and the batch's origin must name that page.
            if !page.problems.isEmpty, !pending.isEmpty {
                guard flush(to: sink, producer: producer) else { return }
            }
            pending.add(changes: page.changes, problems: page.problems, ids: page.ids, bodyBytes: page.bodyBytes,
                        totalHint: page.totalHint, origin: page.origin, digest: page.digest, unchangedRecords: page.unchangedRecords)
            let reached = reachedCursor(after: page)
            let perPage = leg == .listing ? commitsPerPage : leg == .feed && options.feed!.commitsPerPage
            let due = page.isLast || page.restartsListing || !page.problems.isEmpty || pending.count >= batchTarget
                || pending.bodyBytes >= batchByteLimit || pending.age >= maxBatchDelay
            // A head's page is held for the listing after it: its start is worth storing only
            // with a listing that read what came before it.
            if due, leg != .head {
                guard flush(to: sink, producer: producer, cursor: page.isLast || perPage ? reached.stored : nil,
                            lastPage: page.isLast && leg == .listing ? page.endsChainAt : nil) else { return }
            } else if perPage {
                // The cursor the held pages would commit; the batch takes it when it goes out.
                pending.cursor = reached.stored
            }
            if page.restartsListing {
                do {
                    try sink.sourceRestartsListing(self)
                } catch {
                    producer.cancel()
                    state = .done
                    return
                }
            }
            guard page.isLast, case .paging = state else { return }
            if leg == .head { pending = PendingBatch() }
            cursor = reached
            legRequests += page.requests
            if page.startExpired, !relisting {
                // The API no longer knows where this pass was to start: it lists everything
                // now and sweeps, instead of leaving the replica behind until the next pass.
                relisting = true
                let head = options.feed.map { $0.role == .changes && $0.start != nil } ?? false
                legs = (head ? [.head] : []) + [.listing]
                logger.notice("store \(store.name): \(page.gaps.map(\.description).joined(separator: "; ")); listing everything in this pass instead",
                              metadata: ["store": "\(store.name)"])
                return startNextLeg(sink: sink)
            }
            legGaps += page.gaps
            legsUnchanged = false
            if leg == .listing {
                listingRan = true
                listingUnchanged = page.listingUnchanged
            }
            if let rateLimit = page.rateLimit {
                // This page is merged; the rest waits for the window the server named.
                state = .done
                sink.source(self, didFailWith: rateLimit)
            } else {
                startNextLeg(sink: sink)
            }
        }
    }

    /// The cursor the pass has reached with `page` of the running leg: the leg moves its own
    /// part (the listing's mark, validators and delta; the feed's mark and start), the rest is
    /// as the pass reached it before.
    private func reachedCursor(after page: JSONPageProducer.ScannedPage) -> JSONCollectionCursor {
        switch leg {
        case .listing:
            var reached = page.cursor
            reached.feedMark = cursor.feedMark
            reached.feedStart = cursor.feedStart
            return reached
        case .head:
            var reached = cursor
            reached.feedStart = page.cursor.delta ?? ""
            return reached
        case .feed:
            var reached = cursor
            reached.feedMark = page.cursor.highWater
            if page.startExpired { reached.feedStart = nil } else if let start = page.cursor.delta { reached.feedStart = start }
            return reached
        }
    }

    /// Hands the held pages to the sink as one batch (with `cursor`, or the cursor the held
    /// pages earned). False when the sink threw: the pass is over and the source stops.
    private func flush(to sink: any RemoteSourceSink, producer: JSONPageProducer, cursor: String? = nil, lastPage: Int? = nil) -> Bool {
        guard !pending.isEmpty else { return true }
        let held = pending
        pending = PendingBatch()
        var batch = ChangeBatch(changes: held.changes, cursor: cursor ?? held.cursor, problems: held.problems,
                                totalHint: held.totalHint, origin: held.origin, pageCount: held.pageCount)
        batch.pageDigests = held.digests
        batch.unchangedRecords = held.unchangedRecords
        batch.unchangedPages = held.unchangedPages
        batch.lastPage = lastPage
        do {
            if !held.ids.isEmpty { try sink.source(self, didList: held.ids) }
            try sink.source(self, didProduce: batch)
            return true
        } catch {
            producer.cancel()
            state = .done
            return false
        }
    }

    /// Ends the pass with `error`. Complete pages held for a bigger batch are handed over
    /// first, as they would have been without batching; only the failed page is lost.
    private func fail(_ error: SyncError, sink: any RemoteSourceSink, producer: JSONPageProducer) {
        producer.cancel()
        guard flush(to: sink, producer: producer) else { return }
        state = .done
        sink.source(self, didFailWith: error)
    }
}

/// Carries the sink into a block posted to the source's own run loop, where alone it is used.
private struct UncheckedSink: @unchecked Sendable {
    let sink: any RemoteSourceSink
}

/// Carries the source into blocks posted to its own run loop (where alone it is touched).
private final class LoopBoundSource: @unchecked Sendable {
    weak var source: JSONCollectionSource?

    init(_ source: JSONCollectionSource) {
        self.source = source
    }
}
