import Foundation
import Logging

/// Parse Server REST (`GET {mount}/classes/{Class}`), incremental by `updatedAt` with `objectId`
/// as tie-breaker, deletions found by reconciling the full `objectId` listing.
///
/// Paging is keyset paging, never `skip` (skip loses or repeats rows when data changes under a
/// pass). After the record (T, I) the next page asks for
/// `{"$or":[{"updatedAt":{"$gt":T}},{"updatedAt":T,"objectId":{"$gt":I}}]}` ordered by
/// `updatedAt,objectId`: records sharing one timestamp across a page boundary are neither lost nor
/// fetched twice, and a page made only of one timestamp still moves forward. Records changed
/// during a pass get a newer `updatedAt` and come later in the same pass or in the next one.
/// Each page is ordered, so each batch carries the cursor of its last record and a pass
/// interrupted anywhere resumes where its last committed page ended.
///
/// Parse stamps `updatedAt` on the app server before the write commits, so an object can
/// become visible with a stamp at or before a cursor a pass has already stored (a slow write,
/// two saves in one millisecond, app servers with skewed clocks). An incremental pass therefore
/// starts `lookback` (default 30 s) before the stored cursor. Objects it reads again carry the
/// version the replica has, and the merge leaves them alone; the stored cursor never moves back.
public final class ParseSource: RemoteSource {
    private enum State {
        case idle
        case changes(sink: any RemoteSourceSink, after: ParseCursor?, firstPage: Bool)
        /// Fetching by objectId the records an earlier pass could not store; `asked` are in flight.
        case pending(sink: any RemoteSourceSink, asked: [String], rest: [String])
        case listing(sink: any RemoteSourceSink, after: String?)
        case done
    }

    private let store: StoreConfiguration
    private let logger: Logger
    private let classURL: String
    private let headers: HTTPHeaders
    private let pageSize: Int
    private let lookback: Duration
    /// The cursor stored when the pass began: batches never carry an earlier one.
    private var storedCursor: ParseCursor?
    private let loader: HTTPPageLoader
    private var state = State.idle
    private var plan = PassPlan(cursor: nil, reconcile: false)
    private let changeScanner: JSONRecordScanner
    private let listScanner = JSONRecordScanner(layout: .init(recordsPath: "results", idPath: "objectId"))
    private let errorContext: HTTPStatusClassifier.Context
    /// The store's `where` (``ParseOptions/filter``), joined to every read's own condition.
    private let filter: String?
    private let className: String
    /// A listing from no cursor found no object at all: Parse answers a class it does not
    /// know (a typo in `class =`) just so, with an empty result.
    private var listedNothing = false

    /// A source for one pass of `context.store`, whose options were checked at load time.
    init(_ context: RemoteSourceContext, options: ParseOptions) {
        store = context.store
        logger = context.logger
        errorContext = HTTPStatusClassifier.Context(context.store)
        let endpoint = ParseEndpoint(store: context.store, options: options)
        classURL = endpoint.classURL
        headers = endpoint.headers
        pageSize = options.pageSize
        lookback = options.lookback
        filter = options.filter
        className = options.className
        loader = HTTPPageLoader(configuration: store.session, query: store.query, retry: ReadRetry(maxRetries: store.session.readRetries))
        loader.reportRetries(to: logger, store: store.name)
        changeScanner = JSONRecordScanner(layout: .init(recordsPath: "results", idPath: "objectId", versionPath: "updatedAt",
                                                        fieldPaths: ["count"]))
    }

    public func start(_ plan: PassPlan, sink: any RemoteSourceSink) {
        guard case .idle = state else { preconditionFailure("ParseSource started twice") }
        self.plan = plan
        var after: ParseCursor?
        if let stored = plan.cursor {
            after = ParseCursor(stored: stored)
            if after == nil {
                logger.warning("stored cursor is not a Parse cursor; syncing from the start", metadata: ["store": "\(store.name)"])
            }
        }
        storedCursor = after
        if let stored = after, lookback > .zero {
            // Everything updated from `lookback` before the cursor's stamp on: no objectId sorts
            // before "", so the keyset condition includes the window's first millisecond.
            if let start = Self.stamp(stored.updatedAt, minus: lookback) {
                after = ParseCursor(updatedAt: start, objectId: "")
            } else {
                logger.warning("stored cursor's updatedAt is not an ISO-8601 date; no lookback this pass",
                               metadata: ["store": "\(store.name)", "updatedAt": "\(stored.updatedAt)"])
            }
        }
        state = .changes(sink: sink, after: after, firstPage: true)
        loadChanges(after: after, firstPage: true)
    }

    /// `updatedAt` moved back by `interval`, in Parse's own form (`2024-05-01T12:00:00.000Z`).
    /// Without an `ISO8601DateFormatter`, whose ICU set-up cost more than the rest of a pass
    /// that finds nothing new.
    static func stamp(_ updatedAt: String, minus interval: Duration) -> String? {
        guard let date = InternetTimestamp.date(from: updatedAt) else { return nil }
        return InternetTimestamp.string(from: date.addingTimeInterval(-interval.seconds))
    }

    public func cancel() {
        loader.cancel()
        state = .done
    }

    // MARK: Requests

    func changesRequest(after: ParseCursor?, firstPage: Bool) -> HTTPRequest {
        var query = ["order=updatedAt,objectId", "limit=\(pageSize)"]
        if let after {
            let date = #"{"__type":"Date","iso":"# + JSONText.quoted(after.updatedAt) + "}"
            let condition = #"{"$or":[{"updatedAt":{"$gt":"# + date + #"}},{"updatedAt":"# + date
                + #","objectId":{"$gt":"# + JSONText.quoted(after.objectId) + "}}]}"
            query.insert("where=" + URLQuery.encode(filtered(condition)), at: 0)
        } else if let filter {
            query.insert("where=" + URLQuery.encode(filter), at: 0)
        }
        // The first page of a pass also asks for the number of matching objects (progress).
        if firstPage { query.append("count=1") }
        return HTTPRequest(url: classURL + "?" + query.joined(separator: "&"), headers: headers)
    }

    /// Objects by id: `where={"objectId":{"$in":[...]}}`.
    func idsRequest(_ ids: [String]) -> HTTPRequest {
        guard filter != nil else { return HTTPRequest(url: ParseEndpoint.objectsURL(classURL: classURL, ids), headers: headers) }
        let condition = #"{"objectId":{"$in":["# + ids.map(JSONText.quoted).joined(separator: ",") + "]}}"
        return HTTPRequest(url: classURL + "?where=" + URLQuery.encode(filtered(condition)) + "&limit=\(ids.count)", headers: headers)
    }

    /// Ids asked for at once (a GET URL stays well under 8 KB with 10-character objectIds).
    static let idsPerRequest = 100

    func listingRequest(after: String?) -> HTTPRequest {
        var query = ["keys=objectId", "order=objectId", "limit=\(pageSize)"]
        if let after {
            query.insert("where=" + URLQuery.encode(filtered(#"{"objectId":{"$gt":"# + JSONText.quoted(after) + "}}")), at: 0)
        } else if let filter {
            query.insert("where=" + URLQuery.encode(filter), at: 0)
        }
        return HTTPRequest(url: classURL + "?" + query.joined(separator: "&"), headers: headers)
    }

    /// A read's own condition joined to the store's `where`: `{"$and":[where, condition]}`.
    private func filtered(_ condition: String) -> String {
        guard let filter else { return condition }
        return #"{"$and":["# + filter + "," + condition + "]}"
    }

    private func loadChanges(after: ParseCursor?, firstPage: Bool) {
        loader.load(changesRequest(after: after, firstPage: firstPage)) { [weak self] result in
            self?.receivedChanges(result)
        }
    }

    private func loadListing(after: String?) {
        loader.load(listingRequest(after: after)) { [weak self] result in
            self?.receivedListing(result)
        }
    }

    // MARK: Responses

    private func receivedChanges(_ result: Result<HTTPPageLoader.Page, TransferError>) {
        guard case .changes(let sink, let after, let firstPage) = state else { return }
        let page: HTTPPageLoader.Page
        let scanned: JSONPage
        switch check(result) {
        case .failure(let error): return fail(error, sink: sink)
        case .success(let checked): (page, scanned) = checked
        }
        var changes: [RecordChange] = []
        changes.reserveCapacity(scanned.records.count)
        var problems: [RecordProblem] = []
        var last = after
        for (position, record) in scanned.records.enumerated() {
            if let id = record.id, let version = record.version {
                let key = ParseCursor(updatedAt: version, objectId: id)
                // The keyset query already excludes these; a server that ignores part of the
                // query must still not make us re-apply or go backwards.
                if let after, key <= after { continue }
                if last == nil || last! < key { last = key }
            }
            switch record.outcome(in: page.body, maxBytes: store.maxRecordBytes, position: position) {
            case .record(let remote): changes.append(.upsert(remote))
            case .problem(let problem): problems.append(problem)
            }
        }
        let total = firstPage ? scanned.fields["count"]?.text.flatMap { Int64($0) } : nil
        if firstPage, after == nil, filter == nil, total == 0, scanned.records.isEmpty { listedNothing = true }
        let morePages = scanned.records.count >= pageSize && last != after
        // Pipelining: the next request starts before this page is handed over.
        if morePages {
            state = .changes(sink: sink, after: last, firstPage: false)
            loadChanges(after: last, firstPage: false)
        } else {
            afterChanges(sink: sink, pending: plan.pendingIDs)
        }
        if !changes.isEmpty || !problems.isEmpty || total != nil || last != after {
            // Inside the lookback window `last` is behind the stored cursor; keep the latter.
            let cursor = [last, storedCursor].compactMap { $0 }.max()
            let batch = ChangeBatch(changes: changes, cursor: cursor.map(\.stored), problems: problems, totalHint: total,
                                    origin: page.request.url)
            do {
                try sink.source(self, didProduce: batch)
            } catch {
                loader.cancel()
                state = .done
                return
            }
        }
        if case .done = state, !loader.isCancelled {
            // A sink that cancelled us inside didProduce also lands here with the loader cancelled.
            sink.source(self, didFinishWith: SourceOutcome(listingComplete: false, requests: loader.requestCount, gaps: ownGaps))
        }
    }

    /// What follows the changes: the pending records, then the listing, then the end.
    private func afterChanges(sink: any RemoteSourceSink, pending: [String]) {
        if !pending.isEmpty {
            let asked = Array(pending.prefix(Self.idsPerRequest))
            state = .pending(sink: sink, asked: asked, rest: Array(pending.dropFirst(asked.count)))
            loader.load(idsRequest(asked)) { [weak self] result in self?.receivedPending(result) }
        } else if plan.reconcile {
            state = .listing(sink: sink, after: nil)
            loadListing(after: nil)
        } else {
            state = .done
        }
    }

    /// Records fetched by id: each one found is merged again; each one the class no longer has
    /// is deleted (nothing is missing for it any more).
    private func receivedPending(_ result: Result<HTTPPageLoader.Page, TransferError>) {
        guard case .pending(let sink, let asked, let rest) = state else { return }
        let page: HTTPPageLoader.Page
        let scanned: JSONPage
        switch check(result) {
        case .failure(let error): return fail(error, sink: sink)
        case .success(let checked): (page, scanned) = checked
        }
        var changes: [RecordChange] = []
        var problems: [RecordProblem] = []
        var found = Set<String>()
        for (position, record) in scanned.records.enumerated() {
            if let id = record.id { found.insert(id) }
            switch record.outcome(in: page.body, maxBytes: store.maxRecordBytes, position: position) {
            case .record(let remote): changes.append(.upsert(remote))
            case .problem(let problem): problems.append(problem)
            }
        }
        changes += asked.filter { !found.contains($0) }.map { .delete(id: $0) }
        afterChanges(sink: sink, pending: rest)
        do {
            try sink.source(self, didProduce: ChangeBatch(changes: changes, cursor: nil, problems: problems, origin: page.request.url))
        } catch {
            loader.cancel()
            state = .done
            return
        }
        if case .done = state, !loader.isCancelled {
            sink.source(self, didFinishWith: SourceOutcome(listingComplete: false, requests: loader.requestCount, gaps: ownGaps))
        }
    }

    private func receivedListing(_ result: Result<HTTPPageLoader.Page, TransferError>) {
        guard case .listing(let sink, _) = state else { return }
        let scanned: JSONPage
        switch check(result) {
        case .failure(let error):
            // The changes are committed; only the sweep is off for this pass, and it is owed.
            logger.warning("store \(store.name): reconciliation listing failed; no sweep this pass", metadata: ["store": "\(store.name)", "error": "\(error)"])
            state = .done
            sink.source(self, didFinishWith: SourceOutcome(listingComplete: false, requests: loader.requestCount,
                                                           gaps: [.sweepSkipped(reason: "the objectId listing failed: \(error.message)")] + ownGaps))
            return
        case .success(let checked): scanned = checked.1
        }
        let ids = scanned.records.compactMap(\.id)
        let complete = scanned.records.count < pageSize || ids.isEmpty
        if complete {
            state = .done
        } else {
            let lastId = ids.max()!
            state = .listing(sink: sink, after: lastId)
            loadListing(after: lastId)
        }
        do {
            try sink.source(self, didList: ids)
        } catch {
            loader.cancel()
            state = .done
            return
        }
        if complete, case .done = state, !loader.isCancelled {
            sink.source(self, didFinishWith: SourceOutcome(listingComplete: true, requests: loader.requestCount, gaps: ownGaps))
        }
    }

    /// What this pass's reads show of the class: nothing in it, which a mistyped class looks
    /// like too.
    private var ownGaps: [ReplicaGap] {
        guard listedNothing else { return [] }
        logger.warning("store \(store.name): class \(className) holds no objects; Parse answers a class it does not know the same way, so check class = in the store's section",
                       metadata: ["store": "\(store.name)"])
        return [.nothingListed(hint: "class \(className) holds no objects, and Parse answers a class it does not know the same way (check class = in the store's section)")]
    }

    /// A usable page, or the error it stands for.
    private func check(_ result: Result<HTTPPageLoader.Page, TransferError>) -> Result<(HTTPPageLoader.Page, JSONPage), SyncError> {
        let page: HTTPPageLoader.Page
        switch result {
        case .failure(let error): return .failure(SyncError(error, store: store))
        case .success(let loaded): page = loaded
        }
        let status = page.head.status
        guard (200..<300).contains(status) else { return .failure(statusError(page)) }
        let scanner = if case .listing = state { listScanner } else { changeScanner }
        do {
            return .success((page, try scanner.scan(page.body)))
        } catch {
            return .failure(page.malformedJSON(error, store: store.name))
        }
    }

    /// Parse's own error answers (`{"code":N,"error":"..."}` with a 4xx other than the
    /// credentials and rate-limit statuses) become `.remote(code: "parse-N")`; every other
    /// answer is classified as for any HTTP store.
    private func statusError(_ page: HTTPPageLoader.Page) -> SyncError {
        let status = page.head.status
        if (400..<500).contains(status), ![401, 403, 429].contains(status),
           let object = try? JSONSerialization.jsonObject(with: page.body) as? [String: Any], let code = object["code"] as? Int {
            let message = ErrorBodySnippet.summary(of: Data((object["error"] as? String ?? "no message").utf8), contentType: "text/plain",
                                                   redacting: errorContext.secrets) ?? "no message"
            return SyncError(.remote(code: "parse-\(code)"), store: store.name, url: page.request.url,
                             message: "Parse error \(code): \(message)")
        }
        // Every request goes to the configured mount and class: a 404 means the url is wrong.
        return page.statusError(target: .configuredURL, context: errorContext)
    }

    private func fail(_ error: SyncError, sink: any RemoteSourceSink) {
        loader.cancel()
        state = .done
        sink.source(self, didFailWith: error)
    }
}

extension String {
    var trimmingTrailingSlashes: String {
        var text = self
        while text.hasSuffix("/") { text.removeLast() }
        return text
    }
}
