import Foundation
import Logging

/// A CardDAV or CalDAV collection synced with WebDAV sync-collection (RFC 6578).
///
/// One pass:
/// 1. **Sync.** REPORT sync-collection with the stored token (the cursor), or an empty token
///    for a first sync, which lists every member. Members with a 2xx changed, members with 404
///    are deleted. A truncated answer (a 507, `DAV:number-of-matches-within-limits`) is never
///    trusted as complete: the pass continues with the returned token until an answer is whole,
///    and only the last token is ever handed out.
/// 2. **Query.** When a full listing names more members than one multiget takes, one
///    addressbook-query / calendar-query fetches the whole collection's data (Xandikos: 0.9 s
///    for 10,000 cards, where 100 multigets take 6 s), merged in batches of 1,000 records.
///    Only listed members are taken from it.
///    The listing's token was issued before the query ran, so anything the query shows newer
///    is reported again by the next pass, and nothing older can hide behind the token.
/// 3. **Fetch.** Changed members not yet fetched (all of them in an incremental pass; in a full
///    one, those the query left out, which a server that caps or misreads queries may do) are
///    fetched with addressbook-multiget / calendar-multiget in batches of `multiget-batch`
///    (default 100), two in flight so the server never idles while Ferry merges; answers are
///    handed over in batch order.
/// 4. **Invalid token** (403 or 412 with `DAV:valid-sync-token`): a full resync from an empty
///    token; every member's id goes to ``RemoteSourceSink/source(_:didList:)`` and the outcome
///    says the listing is complete, so the engine sweeps what vanished.
/// 5. **No sync-collection** (REPORT 400/403/405/501 without that precondition, or a multistatus
///    without a token): PROPFIND Depth 1 lists every member, which are all fetched as above;
///    the cursor stays as it was.
/// 6. **A filtered calendar** (``CalendarFilter``): one calendar-query per component type, with
///    the time range, lists and fetches what the filter keeps, and the listing is complete, so
///    rows it no longer names are swept. A server that refuses the query gets a full pass
///    (steps 1 to 3, or 5) whose records are filtered here before they are listed or merged.
///    Either way the stored cursor is emptied: a token says nothing about a range that moves.
///
/// Every multistatus is parsed while it downloads (``MultistatusStream``), so memory does not
/// grow with the collection. Every batch carries cursor `nil` except the last one (possibly
/// empty, holding the deletes when nothing changed), which carries the new token: a crash
/// mid-pass replays from the old token, and replays are no-ops because versions are etags.
///
/// A record's id is the member href relative to the collection (``WebDAVCollection``), its
/// version the etag as sent (quotes kept), its body the address-data / calendar-data text, and
/// its fields what ``CardFieldExtractor`` finds.
public final class WebDAVSource: RemoteSource, RemoteSessionDelegate {
    public let store: StoreConfiguration
    private let logger: Logger
    var builder: WebDAVRequestBuilder
    private let parser: MultistatusParser
    let memberReader: WebDAVMemberReader
    private let batchSize: Int
    private let errorContext: HTTPStatusClassifier.Context
    private var session: RemoteSession!
    private var sink: (any RemoteSourceSink)?
    var phase = Phase.idle
    private var mode = Mode.incremental
    private var plan = PassPlan(cursor: nil, reconcile: false)
    /// By task identifier; an entry stays until its answer is parsed, after the transfer
    /// ended. Not by `ObjectIdentifier(task)`: the session lets go of a task once its transfer
    /// ends, and a task started meanwhile can be allocated at the freed address and take over
    /// the entry of an answer still being parsed (a multiget lost that way held a pass forever).
    private var inFlight: [Int: InFlight] = [:]
    private var requests = 0
    /// The answer to the collection check, as it is parsed.
    private var checkResponses: [Multistatus.Response] = []

    // The pass's accumulated result of the sync phase.
    var changes = WebDAVChangeSet()
    private var token: String?
    private var deletesDelivered = false

    // The query: listed members not yet handed over, and records waiting for a full batch.
    private var unfetched: Set<String> = []
    var queryBatch: [RecordChange] = []
    var queryProblems: [RecordProblem] = []
    var queryBatchBytes = 0
    /// Records merged per batch from the query: it carries the whole collection, so its
    /// batches are sized for a bulk merge (fewer, larger transactions rewrite the same index
    /// pages less often: 10,000 cards merged 0.1 s faster than in batches of 100), not by the
    /// multiget size.
    static let queryBatchLimit = (records: 1_000, bytes: 4 << 20)

    /// Multiget batches (hrefs); requested so far; answers being parsed and parsed answers
    /// waiting for their turn.
    private var batches: [[String]] = []
    private var batchesRequested = 0
    private var parsing: [Int: [Multistatus.Response]] = [:]
    private var answered: [Int: (responses: [Multistatus.Response], url: String)] = [:]
    /// Multigets in flight at once.
    private static let fetchWindow = 2
    /// Members a multiget left out or answered 404 for while listed: fetched one by one with
    /// GET before they are called missing (Xandikos's multiget misreads hrefs with `%23`).
    var stragglers: [String] = []
    var recovered: [RecordChange] = []
    var recoveryProblems: [RecordProblem] = []
    /// A filtered calendar's filter, the component types still to query, what the queries
    /// listed, whether one was cut short, and whether the server refused them (so this pass
    /// filters locally).
    let calendarFilter: CalendarFilter?
    var windowComponents: [String] = []
    var windowListed: Set<String> = []
    var windowTruncated = false
    var filterLocally = false
    /// Bytes of a non-multistatus answer kept for its error message.
    private static let errorBodyLimit = 64 << 10
    /// Bytes awaited after the parser refused a body, for the transfer to fail first.
    private static let refusedBodyWait = 1 << 20

    /// Builds the source for a `carddav` or `caldav` store. Call on the pass's thread: the
    /// session is created here and delivers on this thread's run loop.
    init(_ context: RemoteSourceContext, options: WebDAVOptions) throws(SyncError) {
        let store = context.store
        self.store = store
        self.logger = context.logger
        guard let collection = WebDAVCollection(url: store.url) else {
            // The configuration checked the URL already; a store built in code may not have.
            throw SyncError(.configuration, store: store.name, url: store.url, message: "url must be an absolute http or https URL (\(store.location))")
        }
        batchSize = options.multigetBatch
        errorContext = HTTPStatusClassifier.Context(store)
        builder = WebDAVRequestBuilder(collection: collection, kind: options.kind, authentication: options.authentication,
                                       headers: store.headers, query: store.query)
        parser = MultistatusParser(maxDataBytes: store.maxRecordBytes)
        memberReader = WebDAVMemberReader(kind: store.kind, maxRecordBytes: store.maxRecordBytes)
        calendarFilter = options.content == .calendar ? options.calendarFilter : nil
        session = RemoteSession(configuration: store.session, delegate: self)
    }

    // MARK: - RemoteSource

    public func start(_ plan: PassPlan, sink: any RemoteSourceSink) {
        guard case .idle = phase else { preconditionFailure("WebDAVSource started twice") }
        self.plan = plan
        self.sink = sink
        let cursor = plan.cursor.flatMap { $0.isEmpty ? nil : $0 }
        if let calendarFilter {
            mode = .windowed
            windowComponents = calendarFilter.queried
            return queryWindow()
        }
        // A sweep owed by an earlier pass (refused, or cut short) lists everything again.
        mode = cursor == nil ? .initial : plan.reconcile ? .resync : .incremental
        if let cursor, mode == .incremental, cursor == plan.currentToken, plan.pendingIDs.isEmpty {
            // The collection's sync-token, read a moment ago, is the one stored: no change.
            token = cursor
            let box = UncheckedSendableBox(self)
            RunLoopHandle.current().perform { box.value.finishPass() }
        } else if let cursor, mode == .incremental {
            startSync(token: cursor, round: 1)
        } else {
            phase = .checking
            send(builder.propfindCollection(), for: .check)
        }
    }

    public func cancel() {
        if case .done = phase { return }
        endRequests()
        sink = nil
    }

    // MARK: - Requests

    private func startSync(token: String, round: Int) {
        phase = .syncing(round: round)
        send(builder.syncCollection(token: token), for: .sync(token: token))
    }

    func send(_ request: HTTPRequest, for purpose: Purpose) {
        do {
            let task = try session.start(request)
            inFlight[task.identifier] = InFlight(purpose: purpose)
            requests += 1
        } catch {
            // Never call the sink inside start(): report on the next loop turn.
            let failure = SyncError(.transport(error.kind), store: store.name, url: request.url, message: "request not started: \(error.detail)")
            let box = UncheckedSendableBox(self)
            RunLoopHandle.current().perform { box.value.fail(failure) }
        }
    }

    /// Cancels every transfer and every parse; the phase becomes `.done`.
    private func endRequests() {
        phase = .done
        session.cancelAll()
        for request in inFlight.values { request.stream?.cancel() }
        inFlight.removeAll()
    }

    // MARK: - RemoteSessionDelegate

    public func session(_ session: RemoteSession, task: TransferTask, didReceive head: ResponseHead) {
        let key = task.identifier
        guard var request = inFlight[key] else { return }
        request.head = head
        if head.redirects > 0, request.purpose.expectsMultistatus { followMove(head) }
        if request.purpose.expectsMultistatus, (200..<300).contains(head.status) || head.status == 507 {
            request.stream = MultistatusStream(parser: parser, name: store.name, flow: task.flowControl, handlers: .init(
                responses: { [weak self] in self?.parsed($0, key) },
                end: { [weak self] in self?.parsed(end: $0, key) }))
        }
        inFlight[key] = request
    }

    public func session(_ session: RemoteSession, task: TransferTask, didReceive data: Data) {
        let key = task.identifier
        guard let request = inFlight[key] else { return }
        if let stream = request.stream {
            stream.feed(data)
        } else if let refusal = request.refusal {
            // Waiting for the end of a body already refused; a long one is not worth waiting for.
            inFlight[key]?.bytesAfterRefusal += data.count
            if request.bytesAfterRefusal + data.count > Self.refusedBodyWait {
                task.cancel()
                inFlight[key] = nil
                fail(refusal)
            }
        } else {
            // A member's body (GET) up to one byte past the record limit; an error's start.
            let limit = if case .get = request.purpose { store.maxRecordBytes + 1 } else { Self.errorBodyLimit }
            if request.errorBody.count < limit { inFlight[key]?.errorBody.append(data.prefix(limit - request.errorBody.count)) }
        }
    }

    public func session(_ session: RemoteSession, task: TransferTask, didCompleteWith metrics: TransferMetrics) {
        let key = task.identifier
        guard let request = inFlight[key], let head = task.head else { return }
        if let refusal = request.refusal {
            inFlight[key] = nil
            return fail(refusal)
        }
        if let stream = request.stream {
            // The outcome comes with the parse's end.
            inFlight[key]?.transferEnded = true
            stream.finish()
            return
        }
        inFlight[key] = nil
        answered(head, errorBody: request.errorBody, for: request.purpose)
    }

    public func session(_ session: RemoteSession, task: TransferTask, didFailWith error: TransferError) {
        guard let request = inFlight.removeValue(forKey: task.identifier) else { return }
        request.stream?.cancel()
        fail(SyncError(error, store: store, position: positionDescription))
    }

    // MARK: - Parsed answers

    /// Complete responses of a multistatus, as the parser finds them.
    private func parsed(_ responses: [Multistatus.Response], _ key: Int) {
        guard let request = inFlight[key] else { return }
        switch request.purpose {
        case .check:
            checkResponses += responses
        case .sync, .propfind:
            for response in responses { changes.absorb(response, in: builder.collection) }
        case .query:
            take(responses)
        case .window:
            takeWindow(responses)
        case .multiget(let batch):
            parsing[batch, default: []] += responses
        case .get:
            break
        }
    }

    /// The end of a multistatus: its summary, or why it is invalid.
    private func parsed(end outcome: Result<Multistatus, MultistatusParser.Failure>, _ key: Int) {
        guard let request = inFlight[key], let head = request.head else { return }
        let summary: Multistatus
        switch outcome {
        case .success(let value):
            inFlight[key] = nil
            summary = value
        case .failure(let failure):
            let refusal = SyncError(.malformedResponse, store: store.name, url: head.url, position: "\(positionDescription), line \(failure.line) column \(failure.column)", message: "invalid WebDAV XML: \(failure.message)")
            guard request.transferEnded else {
                // Wait for the transfer: its failure, if it fails, is the cause.
                inFlight[key]?.refusal = refusal
                inFlight[key]?.stream = nil
                return
            }
            inFlight[key] = nil
            return fail(refusal)
        }
        switch request.purpose {
        case .check:
            endCheck(head: head)
        case .get:
            break
        case .sync(let token):
            endSync(summary, head: head, sentToken: token)
        case .propfind:
            beginFetching()
        case .query:
            endQuery(truncated: summary.isTruncated || head.status == 507)
        case .window:
            windowTruncated = windowTruncated || summary.isTruncated || head.status == 507
            queryWindow()
        case .multiget(let batch):
            answered[batch] = (parsing.removeValue(forKey: batch) ?? [], head.url)
            deliverAnsweredBatches()
        }
    }

    /// A request to the collection was redirected. Members are named relative to where it led
    /// (a server that moved `/old/book/` names them `/dav/book/...`), and later requests go
    /// there directly when the store's credentials may go too (the same origin, or the same
    /// host over https); otherwise through the redirect, which withholds them.
    private func followMove(_ head: ResponseHead) {
        guard let found = WebDAVCollection(answeredAt: head.url),
              let moved = builder.collection.moved(to: found, followed: !head.credentialsWithheld) else { return }
        builder.collection = moved
        let target = found.url.redactingUserInfo
        if head.credentialsWithheld {
            logger.notice("store \(store.name): the collection URL redirects to another origin (\(target)); requests go on through the redirect, without the store's credentials",
                          metadata: ["store": "\(store.name)"])
        } else if head.isPermanentlyRedirected {
            logger.notice("store \(store.name): the collection has moved to \(target) (a permanent redirect); this pass syncs it there; set url = \(target) in the store's section",
                          metadata: ["store": "\(store.name)"])
        } else {
            logger.info("store \(store.name): the collection URL redirects to \(target); members are named relative to it",
                        metadata: ["store": "\(store.name)"])
        }
    }

    /// An answer that is not a multistatus (an error status, or a 2xx without a body).
    private func answered(_ head: ResponseHead, errorBody: Data, for purpose: Purpose) {
        switch purpose {
        case .check:
            switch head.status {
            case 400, 403, 405, 415, 501:
                // A server that will not describe the URL: the sync report says the rest.
                logger.debug("the collection check was refused (\(head.status)); syncing without it", metadata: ["store": "\(store.name)"])
                startSync(token: "", round: 1)
            default:
                fail(statusError(head, body: errorBody))
            }
        case .get(let id):
            recoveredMember(id, head: head, body: errorBody)
        case .sync(let token):
            handleSyncRefusal(head, errors: reportErrors(head, errorBody), body: errorBody, sentToken: token)
        case .query:
            let error = statusError(head, body: errorBody)
            let fatal = switch error.kind {
            case .unauthorized, .rateLimited: true
            default: false
            }
            switch fatal && !reportNotSupported(head, errorBody) {
            case true:
                fail(error)
            case false:
                // A server without queries, or one that cannot run this one: the multigets
                // fetch what the query would have.
                logger.info("collection query refused (\(head.status)), fetching by multiget", metadata: ["store": "\(store.name)"])
                endQuery(truncated: false)
            }
        case .window:
            let error = statusError(head, body: errorBody)
            let fatal = switch error.kind {
            case .unauthorized, .rateLimited, .transport: true
            default: false
            }
            switch fatal && !reportNotSupported(head, errorBody) {
            case true:
                fail(error)
            case false:
                // No calendar-query with a time range here: a full pass, filtered locally.
                logger.info("calendar-query refused (\(head.status)), listing the whole calendar and filtering it here", metadata: ["store": "\(store.name)"])
                filterLocally = true
                queryBatch = []
                queryProblems = []
                queryBatchBytes = 0
                windowListed = []
                mode = .initial
                phase = .checking
                send(builder.propfindCollection(), for: .check)
            }
        case .propfind, .multiget:
            fail(statusError(head, body: errorBody))
        }
    }

    /// Whether a REPORT's error answer says the server does not do that report or filter
    /// (``SyncReportRefusal/reportNotSupported(status:errors:)``): the same reading for every
    /// REPORT, so a 403 naming `DAV:supported-report` falls back instead of failing as refused
    /// credentials.
    private func reportNotSupported(_ head: ResponseHead, _ body: Data) -> Bool {
        SyncReportRefusal.reportNotSupported(status: head.status, errors: reportErrors(head, body))
    }

    /// The `DAV:error` elements a REPORT's 4xx answer names (valid-sync-token,
    /// supported-report...); an unparseable body says nothing.
    private func reportErrors(_ head: ResponseHead, _ body: Data) -> [String] {
        (400..<500).contains(head.status) ? (try? parser.parse(body))?.errors ?? [] : []
    }

    // MARK: - Collection check

    /// The URL's resource type answered: go on when it is the collection the store syncs.
    private func endCheck(head: ResponseHead) {
        let own = checkResponses.first { response in response.hrefs.contains { builder.collection.id(forHref: $0) == nil } }
        checkResponses = []
        if let types = own?.resourceTypes,
           let problem = CollectionCheck.problem(with: types, content: store.kind == .caldav ? .calendar : .addressBook, url: store.url) {
            return fail(SyncError(.configuration, store: store.name, url: head.url, position: positionDescription, message: problem))
        }
        startSync(token: "", round: 1)
    }

    // MARK: - Sync phase

    private func endSync(_ status: Multistatus, head: ResponseHead, sentToken: String) {
        if status.root == "error" || status.hasInvalidSyncToken {
            return handleSyncRefusal(head, errors: status.errors, body: Data(), sentToken: sentToken)
        }
        guard let newToken = status.syncToken, !newToken.isEmpty else {
            if head.status != 507 {
                logger.info("no sync-token in the sync-collection answer, falling back to PROPFIND", metadata: ["store": "\(store.name)"])
                return startFallback()
            }
            return fail(SyncError(.remote(code: "507"), store: store.name, url: head.url, position: positionDescription, message: "the server truncated the sync report (507) without a token to continue from"))
        }
        token = newToken
        if head.status == 507 || status.isTruncated {
            // A partial result: continue from the returned token until an answer is whole.
            guard newToken != sentToken else {
                return fail(SyncError(.remote(code: "507"), store: store.name, url: head.url, position: positionDescription, message: "the server keeps truncating the sync report without advancing its token"))
            }
            guard case .syncing(let round) = phase else { return }
            logger.debug("sync report truncated, continuing", metadata: ["store": "\(store.name)", "round": "\(round)"])
            return startSync(token: newToken, round: round + 1)
        }
        beginFetching()
    }

    private func handleSyncRefusal(_ head: ResponseHead, errors: [String], body: Data, sentToken: String) {
        switch SyncReportRefusal.decide(status: head.status, errors: errors, sentToken: sentToken, incremental: mode == .incremental) {
        case .resync:
            // The token expired or the server lost its history: resync everything and list
            // every member so records deleted meanwhile are swept.
            logger.notice("sync-token refused, full resync with reconciliation", metadata: ["store": "\(store.name)", "status": "\(head.status)"])
            mode = .resync
            resetSyncState()
            startSync(token: "", round: 1)
        case .fallBack:
            logger.info("sync-collection not supported (\(head.status)), falling back to PROPFIND", metadata: ["store": "\(store.name)"])
            startFallback()
        case .fail where errors.contains(DAVName.validSyncToken):
            fail(SyncError(.remote(code: "valid-sync-token"), store: store.name, url: head.url, position: positionDescription,
                           message: "the server refused even an empty sync-token (HTTP \(head.status))"))
        case .fail where (200..<300).contains(head.status):
            // A 207 whose root is DAV:error.
            let named = errors.isEmpty ? "" : ": " + errors.joined(separator: ", ")
            fail(SyncError(.remote(code: errors.first ?? "DAV:error"), store: store.name, url: head.url, position: positionDescription,
                           message: "the sync-collection REPORT was answered with a DAV error\(named)"))
        case .fail:
            fail(statusError(head, body: body))
        }
    }

    private func resetSyncState() {
        changes = WebDAVChangeSet()
        token = nil
    }

    private func startFallback() {
        mode = .fallback
        resetSyncState()
        phase = .listing
        send(builder.propfind(), for: .propfind)
    }

    // MARK: - Query

    /// The listing is complete: fetch its changed members.
    private func beginFetching() {
        if mode == .incremental {
            // Members an earlier pass could not store are fetched again with the changes.
            let known = Set(changes.changed).union(changes.deleted)
            for id in plan.pendingIDs where !known.contains(id) {
                changes.noteChanged(id, href: builder.collection.href(forID: id))
            }
        } else {
            // A full listing of the collection: every member the server has now. Pending
            // members it does not name are gone, so nothing is missing for them any more.
            let listed = Set(changes.changed)
            for id in plan.pendingIDs where !listed.contains(id) { changes.noteDeleted(id) }
            // Filtering here: only what the filter keeps is listed, as it is handed over.
            guard filterLocally || deliverList(changes.changed) else { return }
            if changes.changed.count > batchSize {
                unfetched = Set(changes.changed)
                phase = .querying
                return send(builder.queryAll(), for: .query)
            }
        }
        fetch(changes.changed)
    }

    /// Records from the query's answer, for listed members not yet handed over; a member
    /// without data stays for the multigets.
    private func take(_ responses: [Multistatus.Response]) {
        guard case .querying = phase else { return }
        for response in responses {
            guard let id = builder.collection.id(forHref: response.href), unfetched.contains(id) else { continue }
            guard (200..<300).contains(response.effectiveStatus ?? 200), response.data != nil || response.dataTooLarge else { continue }
            unfetched.remove(id)
            append(response, id: id, to: &queryBatch, problems: &queryProblems)
            queryBatchBytes += response.data?.utf8.count ?? 0
            if queryBatch.count + queryProblems.count >= Self.queryBatchLimit.records || queryBatchBytes >= Self.queryBatchLimit.bytes {
                guard handOverQueryBatch(cursor: nil) else { return }
            }
        }
    }

    func handOverQueryBatch(cursor: String?) -> Bool {
        let batch = ChangeBatch(changes: takeDeletes() + queryBatch, cursor: cursor, problems: queryProblems, origin: builder.collection.url)
        queryBatch = []
        queryProblems = []
        queryBatchBytes = 0
        return deliver(batch)
    }

    private func endQuery(truncated: Bool) {
        guard case .querying = phase else { return }
        // The listing's order, for the multigets of what the query left out.
        let rest = changes.changed.filter { unfetched.contains($0) }
        unfetched = []
        if rest.isEmpty {
            guard handOverQueryBatch(cursor: finalCursor) else { return }
            return finishPass()
        }
        if truncated || rest.count < changes.changed.count {
            logger.info("collection query left out \(rest.count) listed members\(truncated ? " (truncated answer)" : ""), fetching them by multiget", metadata: ["store": "\(store.name)"])
        }
        if !queryBatch.isEmpty || !queryProblems.isEmpty {
            guard handOverQueryBatch(cursor: nil) else { return }
        }
        fetch(rest)
    }

    // MARK: - Multigets

    /// Multigets `ids` in batches, then ends the pass.
    private func fetch(_ ids: [String]) {
        batches = stride(from: 0, to: ids.count, by: batchSize).map { start in
            ids[start..<min(start + batchSize, ids.count)].map { changes.hrefs[$0]! }
        }
        guard !batches.isEmpty else {
            guard deliver(ChangeBatch(changes: takeDeletes(), cursor: finalCursor, origin: builder.collection.url)) else { return }
            return finishPass()
        }
        phase = .fetching(batch: 0)
        requestMoreBatches()
    }

    /// The pass's deletes, once: they ride with the first batch handed over.
    func takeDeletes() -> [RecordChange] {
        guard !deletesDelivered else { return [] }
        deletesDelivered = true
        return changes.deleted.map { .delete(id: $0) }
    }

    var finalCursor: String? {
        // A filtered calendar keeps no token (an empty cursor: the next pass lists again).
        if calendarFilter != nil { return "" }
        return mode == .fallback ? nil : token
    }

    /// Keeps `fetchWindow` multigets in flight, counted from the oldest batch not yet handed over.
    private func requestMoreBatches() {
        guard case .fetching(let oldest) = phase else { return }
        while batchesRequested < batches.count, batchesRequested < oldest + Self.fetchWindow {
            send(builder.multiget(hrefs: batches[batchesRequested]), for: .multiget(batch: batchesRequested))
            batchesRequested += 1
        }
    }

    private func deliverAnsweredBatches() {
        while case .fetching(let oldest) = phase, let (responses, url) = answered.removeValue(forKey: oldest) {
            let isLast = oldest == batches.count - 1
            // The next request goes out before this batch is merged.
            phase = .fetching(batch: oldest + 1)
            requestMoreBatches()
            var changes = takeDeletes()
            var problems: [RecordProblem] = []
            records(from: responses, requested: batches[oldest], into: &changes, problems: &problems)
            // The cursor waits for the stragglers, when there are any.
            let result = ChangeBatch(changes: changes, cursor: isLast && stragglers.isEmpty ? finalCursor : nil, problems: problems, origin: url)
            guard deliver(result) else { return }
            if isLast { return stragglers.isEmpty ? finishPass() : recoverNext() }
        }
    }

    // MARK: - Ending

    private var positionDescription: String {
        switch phase {
        case .syncing(let round): "sync report \(round)"
        case .listing: "PROPFIND listing"
        case .checking: "collection check"
        case .querying: mode == .windowed ? "calendar-query" : "collection query"
        case .recovering: "GET of members the multigets left out"
        case .fetching(let batch): "multiget batch \(batch)"
        case .idle, .done: ""
        }
    }

    /// Hands a batch over; false when the pass has ended (the sink threw or cancelled). A pass
    /// that filters locally hands over only the records the filter keeps, and lists them (and
    /// those it could not read, which stay as they are) first.
    func deliver(_ batch: ChangeBatch) -> Bool {
        guard filterLocally, let calendarFilter else { return handOver { try $0.source(self, didProduce: batch) } }
        var batch = batch
        let now = Date()
        batch.changes = batch.changes.filter { change in
            guard case .upsert(let record) = change else { return true }
            return calendarFilter.includes(String(decoding: record.body, as: UTF8.self), now: now)
        }
        let kept = batch.changes.compactMap { change -> String? in if case .upsert(let record) = change { record.id } else { nil } }
        let unread = batch.problems.compactMap(\.id)
        guard kept.isEmpty && unread.isEmpty || deliverList(kept + unread) else { return false }
        return handOver { try $0.source(self, didProduce: batch) }
    }

    func deliverList(_ ids: [String]) -> Bool {
        handOver { try $0.source(self, didList: ids) }
    }

    /// Runs one sink call; false when the pass has ended, by the sink throwing or cancelling.
    private func handOver(_ call: (any RemoteSourceSink) throws -> Void) -> Bool {
        guard let sink else { return false }
        do {
            try call(sink)
        } catch {
            // The pass failed in the sink: stop everything, say nothing more.
            cancel()
            return false
        }
        if case .done = phase { return false }
        return true
    }

    func finishPass() {
        guard let sink else { return }
        let outcome = SourceOutcome(
            listingComplete: mode != .incremental && !windowTruncated,
            requests: requests,
            unchanged: mode == .incremental && changes.isEmpty && token == plan.cursor,
            gaps: windowTruncated ? [.sweepSkipped(reason: "the server cut the calendar-query answer short")] : []
        )
        endRequests()
        self.sink = nil
        sink.source(self, didFinishWith: outcome)
    }

    func fail(_ error: SyncError) {
        guard let sink else { return }
        endRequests()
        self.sink = nil
        sink.source(self, didFailWith: error)
    }

    /// Every request goes to the configured collection, so a 404 means the url is wrong.
    func statusError(_ head: ResponseHead, body: Data) -> SyncError {
        HTTPStatusClassifier.error(head, body: body, target: .configuredURL, position: positionDescription, context: errorContext)
    }
}
