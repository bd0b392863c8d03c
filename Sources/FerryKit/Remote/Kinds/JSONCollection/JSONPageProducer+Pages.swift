import Foundation
import Logging

// What a JSON producer is given, and what it hands its pass.
extension JSONPageProducer {
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
}
