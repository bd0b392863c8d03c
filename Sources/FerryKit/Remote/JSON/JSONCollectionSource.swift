import Foundation
import Logging

/// A paginated JSON collection (GitHub style, Datasette style, or a chain of file:// pages).
///
/// A pass starts at the store URL (plus `<page-size-param>=N`, and `<updated-param>=<high-water
/// mark>` on an incremental pass) and follows the configured pagination until it ends.
///
/// **Cursor.** The cursor holds the highest version seen and the first page's ETag /
/// Last-Modified. When `updated-param` is set the collection must be sorted by the version,
/// ascending (Datasette `_sort=updated_at`, GitHub `sort=updated&direction=asc`): then every page
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
/// validators), hands every id to `didList` as pages arrive and the records as batches; the
/// listing is complete only if the whole chain was read.
public final class JSONCollectionSource: RemoteSource {
    private enum State {
        case idle
        case paging(sink: any RemoteSourceSink, page: Int)
        case done
    }

    private let store: StoreConfiguration
    private let logger: Logger
    private let options: JSONCollectionOptions
    private let scanner: JSONRecordScanner
    private let headers: HTTPHeaders
    private let loader: HTTPPageLoader
    private var state = State.idle
    private var plan = PassPlan(cursor: nil, reconcile: false)
    private var stored = JSONCollectionCursor()
    /// The cursor being built by this pass.
    private var next = JSONCollectionCursor()
    private var firstURL = ""
    private var visited: Set<String> = []
    private var warnedUnsorted = false
    /// Pages parsed but not yet handed over, merged into one batch (see ``batchTarget``).
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
    /// Bytes of record bodies gathered before a batch goes out regardless of ``batchTarget``,
    /// so large records keep memory bounded.
    var batchByteLimit = 16 << 20
    /// A batch goes out once its first page has waited this long, so a slow or rate-limited
    /// API still commits (and shows progress) page by page.
    var maxBatchDelay: Duration = .milliseconds(500)

    public init(_ context: RemoteSourceContext) throws(SyncError) {
        store = context.store
        logger = context.logger
        do {
            options = try JSONCollectionOptions(context.store)
        } catch {
            throw SyncError(.configuration, store: store.name, url: store.url, message: error.problems.joined(separator: "; "))
        }
        scanner = JSONRecordScanner(layout: .init(recordsPath: options.recordsPath, idPath: options.idField,
                                                  versionPath: options.versionField, fieldPaths: options.fieldPaths,
                                                  allowsIntegerIDs: true))
        var headers = HTTPHeaders()
        headers.set("Accept", "application/json")
        if let username = store.username, let password = store.secrets["password"] {
            headers.set("Authorization", "Basic " + Data("\(username):\(password.value)".utf8).base64EncodedString())
        } else if let token = store.secrets["bearer-token"] {
            headers.set("Authorization", "Bearer " + token.value)
        }
        self.headers = headers
        var session = store.session
        if store.url.lowercased().hasPrefix("file://") {
            // A demo dataset may be a chain of files; file:// is allowed only for such a store.
            session.allowedProtocols.insert("file")
        }
        loader = HTTPPageLoader(configuration: session)
    }

    /// Problems with a JSON store's options (empty when usable).
    public static func validate(_ store: StoreConfiguration) -> [String] {
        do {
            _ = try JSONCollectionOptions(store)
            return []
        } catch {
            return error.problems
        }
    }

    /// Whether each page commits the cursor (pages sorted by version) or only the last one.
    private var commitsPerPage: Bool { options.updatedParam != nil }

    public func start(_ plan: PassPlan, sink: any RemoteSourceSink) {
        guard case .idle = state else { preconditionFailure("JSONCollectionSource started twice") }
        self.plan = plan
        if let text = plan.cursor {
            if let cursor = JSONCollectionCursor(stored: text) {
                stored = cursor
            } else {
                logger.warning("stored cursor is not a JSON collection cursor; syncing everything", metadata: ["store": "\(store.name)"])
            }
        }
        var url = store.url
        if let param = options.pageSizeParam { url = Self.setting(param, to: String(store.pageSize), in: url) }
        if let param = options.updatedParam, !plan.reconcile, let mark = stored.highWater {
            url = Self.setting(param, to: mark, in: url)
        }
        firstURL = url
        // A full pass starts the mark afresh; an incremental one keeps it when nothing is newer.
        next = JSONCollectionCursor(highWater: plan.reconcile ? nil : stored.highWater)
        var request = HTTPRequest(url: url, headers: headers)
        if !plan.reconcile, stored.firstURL == url {
            if let etag = stored.etag { request.headers.set("If-None-Match", etag) }
            if let lastModified = stored.lastModified { request.headers.set("If-Modified-Since", lastModified) }
        }
        state = .paging(sink: sink, page: 1)
        load(request)
    }

    public func cancel() {
        loader.cancel()
        pending = PendingBatch()
        state = .done
    }

    private func load(_ request: HTTPRequest) {
        visited.insert(request.url)
        loader.load(request) { [weak self] result in
            self?.received(result)
        }
    }

    // MARK: Pages

    private func received(_ result: Result<HTTPPageLoader.Page, TransferError>) {
        guard case .paging(let sink, let number) = state else { return }
        let page: HTTPPageLoader.Page
        switch result {
        case .failure(let error): return fail(RemoteResponseErrors.transport(error, store: store.name), sink: sink)
        case .success(let loaded): page = loaded
        }
        let status = page.head.status
        if status == 304, number == 1 {
            state = .done
            sink.source(self, didFinishWith: SourceOutcome(listingComplete: false, requests: loader.requestCount, unchanged: true))
            return
        }
        guard (200..<300).contains(status) else { return fail(RemoteResponseErrors.status(page, store: store.name), sink: sink) }
        let scanned: JSONPage
        do {
            scanned = try scanner.scan(page.body)
        } catch {
            return fail(RemoteResponseErrors.malformed(error, page: page, store: store.name), sink: sink)
        }
        if number == 1 {
            next.firstURL = firstURL
            next.etag = page.head.headers["ETag"]
            next.lastModified = page.head.headers["Last-Modified"]
        }

        var changes: [RecordChange] = []
        changes.reserveCapacity(scanned.records.count)
        var problems: [RecordProblem] = []
        var ids: [String] = []
        let committedMark = next.highWater
        for (position, record) in scanned.records.enumerated() {
            switch RemoteResponseErrors.change(for: record, in: page.body, maxBytes: store.maxRecordBytes, position: position) {
            case .record(let remote):
                changes.append(.upsert(remote))
                if plan.reconcile { ids.append(remote.id) }
                if JSONCollectionCursor.isNewer(remote.version, than: next.highWater) {
                    next.highWater = remote.version
                } else if commitsPerPage, number > 1, !warnedUnsorted, let committedMark,
                          JSONCollectionCursor.isNewer(committedMark, than: remote.version) {
                    warnedUnsorted = true
                    logger.warning("pages are not sorted by version; set the URL's sort to the version field",
                                   metadata: ["store": "\(store.name)", "url": "\(page.request.url.redactingUserInfo)"])
                }
            case .problem(let problem):
                problems.append(problem)
                if plan.reconcile, let id = problem.id { ids.append(id) }
            }
        }

        // Pipelining: find and start the next page before handing this one over.
        let nextURL: String?
        switch nextPage(after: page, scanned) {
        case .failure(let error): return fail(error, sink: sink)
        case .success(let url): nextURL = url
        }
        let rateLimited = nextURL != nil && RemoteResponseErrors.isRateLimitExhausted(page.head.headers)
        if let nextURL, !rateLimited {
            state = .paging(sink: sink, page: number + 1)
            load(HTTPRequest(url: nextURL, headers: headers))
        } else {
            state = .done
        }
        let last = nextURL == nil
        let total = number == 1 ? options.totalPath.flatMap { scanned.fields[$0]?.text }.flatMap { Int64($0) } : nil
        // A page with bad records goes out on its own: problem positions are page positions,
        // and the batch's origin must name that page.
        if !problems.isEmpty, !pending.isEmpty {
            guard flush(to: sink) else { return }
        }
        pending.add(changes: changes, problems: problems, ids: ids, bodyBytes: bodyBytes(changes), totalHint: total,
                    origin: page.request.url.redactingUserInfo)
        let due = last || rateLimited || !problems.isEmpty || pending.count >= batchTarget
            || pending.bodyBytes >= batchByteLimit || pending.age >= maxBatchDelay
        if due {
            guard flush(to: sink, cursor: last || commitsPerPage ? next.stored : nil) else { return }
        } else if commitsPerPage {
            // The cursor the held pages would commit; the batch takes it when it goes out.
            pending.cursor = next.stored
        }
        guard !loader.isCancelled, case .done = state else { return }
        if rateLimited {
            // This page is merged; the rest waits for the window the server named.
            sink.source(self, didFailWith: SyncError(.rateLimited, store: store.name, url: page.request.url, position: "page \(number)",
                                                     message: "rate limit exhausted (X-RateLimit-Remaining: 0)",
                                                     retryAfter: RemoteResponseErrors.retryAfter(page.head.headers)))
        } else {
            sink.source(self, didFinishWith: SourceOutcome(listingComplete: plan.reconcile, requests: loader.requestCount))
        }
    }

    /// The next page's URL, nil at the end of the chain.
    private func nextPage(after page: HTTPPageLoader.Page, _ scanned: JSONPage) -> Result<String?, SyncError> {
        var target: String?
        switch options.pagination {
        case .singlePage:
            return .success(nil)
        case .link:
            target = LinkHeader.target(rel: "next", in: page.head.headers.values(for: "Link"), base: page.request.url)
        case .nextURL(let path):
            if let text = scanned.fields[path]?.text, !text.isEmpty {
                target = LinkHeader.resolve(text, against: page.request.url)
                if target == nil { return .failure(malformed(page, "next URL \(text.debugDescription) at \(path) is not a URL")) }
            }
        case .cursor(let param, let path):
            if let token = scanned.fields[path]?.text, !token.isEmpty {
                target = Self.setting(param, to: token, in: firstURL)
            }
        }
        guard let target else { return .success(nil) }
        // A page that points back into the chain would loop forever.
        if visited.contains(target) { return .failure(malformed(page, "pagination loops back to \(target.redactingUserInfo)")) }
        // file:// pages may only chain to files; http pages never to files.
        if target.lowercased().hasPrefix("file:") != store.url.lowercased().hasPrefix("file:") {
            return .failure(malformed(page, "next page \(target.redactingUserInfo) changes scheme"))
        }
        return .success(target)
    }

    /// Hands the held pages to the sink as one batch (with `cursor`, or the cursor the held
    /// pages earned). False when the sink threw: the pass is over and the source stops.
    private func flush(to sink: any RemoteSourceSink, cursor: String? = nil) -> Bool {
        guard !pending.isEmpty else { return true }
        let held = pending
        pending = PendingBatch()
        let batch = ChangeBatch(changes: held.changes, cursor: cursor ?? held.cursor, problems: held.problems,
                                totalHint: held.totalHint, origin: held.origin)
        do {
            if !held.ids.isEmpty { try sink.source(self, didList: held.ids) }
            try sink.source(self, didProduce: batch)
            return true
        } catch {
            loader.cancel()
            state = .done
            return false
        }
    }

    private func bodyBytes(_ changes: [RecordChange]) -> Int {
        changes.reduce(0) { total, change in
            if case .upsert(let record) = change { total + record.body.count } else { total }
        }
    }

    private func malformed(_ page: HTTPPageLoader.Page, _ message: String) -> SyncError {
        SyncError(.malformedResponse, store: store.name, url: page.request.url, message: message)
    }

    /// Ends the pass with `error`. Complete pages held for a bigger batch are handed over
    /// first, as they would have been without batching; only the failed page is lost.
    private func fail(_ error: SyncError, sink: any RemoteSourceSink) {
        loader.cancel()
        guard flush(to: sink) else { return }
        state = .done
        sink.source(self, didFailWith: error)
    }

    /// `url` with query parameter `name` set to `value` (replacing any existing one).
    static func setting(_ name: String, to value: String, in url: String) -> String {
        let fragmentless = url.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0]
        let parts = fragmentless.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let encodedName = RemoteResponseErrors.queryEncode(name)
        var items = parts.count > 1 ? parts[1].split(separator: "&").map(String.init) : []
        items.removeAll { $0 == encodedName || $0.hasPrefix(encodedName + "=") }
        items.append(encodedName + "=" + RemoteResponseErrors.queryEncode(value))
        return String(parts[0]) + "?" + items.joined(separator: "&")
    }
}
