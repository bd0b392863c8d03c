import Foundation
import Logging

/// A CardDAV or CalDAV collection synced with WebDAV sync-collection (RFC 6578).
///
/// One pass:
/// 1. **Sync.** REPORT sync-collection with the stored token (the cursor), or an empty token
///    for a first sync. Members with a 2xx are changed, members with 404 are deleted. A
///    truncated answer (a 507, `DAV:number-of-matches-within-limits`) is never trusted as
///    complete: the pass continues with the returned token until an answer is whole, and only
///    the last token is ever handed out.
/// 2. **Fetch.** Changed members are fetched with addressbook-multiget / calendar-multiget in
///    batches of `multiget-batch` (default 100), two in flight: while the server answers one,
///    the next waits in its queue, so it never idles while Ferry parses and merges (a multiget
///    costs the server ~0.5 ms per card, the bulk of a first sync). Answers may arrive out of
///    order on two connections and are handed to the sink in batch order. Every batch carries cursor `nil` except the
///    last one (possibly empty, holding the deletes when nothing changed), which carries the new
///    token: a crash mid-pass replays from the old token, and replays are no-ops because
///    versions are opaque etags.
/// 3. **Invalid token** (403 or 412 with `DAV:valid-sync-token`): a full resync with an empty
///    token; every member's id goes to ``RemoteSourceSink/source(_:didList:)`` and the outcome
///    says the listing is complete, so the engine sweeps what vanished.
/// 4. **No sync-collection** (REPORT 400/403/405/501 without that precondition, or a multistatus
///    without a token): PROPFIND Depth 1 lists every member and its etag, all of them are
///    listed to the sink and multigot; the cursor stays as it was.
///
/// A record's id is the member href relative to the collection (``WebDAVCollection``), its
/// version the etag as sent (quotes kept), its body the address-data / calendar-data text, and
/// its fields what ``CardFieldExtractor`` finds.
public final class WebDAVSource: RemoteSource, RemoteSessionDelegate {
    /// Where the pass is. Every transition happens on the creating thread's run loop.
    private enum Phase {
        case idle
        /// A sync-collection REPORT is in flight; `round` counts REPORTs in this pass.
        case syncing(round: Int)
        /// The PROPFIND fallback is in flight.
        case listing
        /// Multigets: `batch` is the oldest batch not yet handed to the sink.
        case fetching(batch: Int)
        /// Finished, failed, or cancelled: nothing more reaches the sink.
        case done
    }

    /// Why the pass syncs from an empty token.
    private enum Mode {
        case incremental
        case initial
        /// The stored token was refused; everything is listed for reconciliation.
        case resync
        /// The server has no sync-collection.
        case fallback
    }

    /// What an in-flight request was for.
    private enum Purpose {
        case sync(token: String)
        case propfind
        case multiget(batch: Int)
    }

    private struct InFlight {
        var purpose: Purpose
        var body = Data()
    }

    public let store: StoreConfiguration
    private let logger: Logger
    private let builder: WebDAVRequestBuilder
    private let parser: MultistatusParser
    private let batchSize: Int
    private var session: RemoteSession!
    private var sink: (any RemoteSourceSink)?
    private var phase = Phase.idle
    private var mode = Mode.incremental
    private var plan = PassPlan(cursor: nil, reconcile: false)
    private var inFlight: [ObjectIdentifier: InFlight] = [:]
    private var requests = 0

    // The pass's accumulated result of the sync phase.
    /// Changed members: ids in first-seen order, and the href to fetch each by.
    private var changedOrder: [String] = []
    private var changedHref: [String: String] = [:]
    private var deleted: [String] = []
    private var deletedSet: Set<String> = []
    private var token: String?
    private var truncatedRounds = 0
    private var batches: [[String]] = []
    /// Multiget batches requested so far, and parsed answers waiting for their turn.
    private var batchesRequested = 0
    private var answered: [Int: (status: Multistatus, url: String)] = [:]
    /// Multigets in flight at once.
    private static let fetchWindow = 2
    /// Members whose data came with the sync answer (empty-token syncs), by id.
    private var inline: [String: Multistatus.Response] = [:]
    private var deletesDelivered = false

    /// Builds the source for a `carddav` or `caldav` store. Call on the pass's thread: the
    /// session is created here and delivers on this thread's run loop.
    public init(_ context: RemoteSourceContext) throws(SyncError) {
        let store = context.store
        self.store = store
        self.logger = context.logger
        guard store.kind == .carddav || store.kind == .caldav else {
            throw SyncError(.configuration, store: store.name, message: "WebDAVSource needs a carddav or caldav store, not \(store.kind.rawValue)")
        }
        guard let collection = WebDAVCollection(url: store.url) else {
            throw SyncError(.configuration, store: store.name, url: store.url, message: "url must be an absolute http or https URL (\(store.location))")
        }
        var batchSize = 100
        if let option = store.options["multiget-batch"] {
            guard let value = Int(option.value), (1...10_000).contains(value) else {
                throw SyncError(.configuration, store: store.name, message: "multiget-batch must be an integer in 1...10000 (\(option.location))")
            }
            batchSize = value
        }
        self.batchSize = batchSize
        builder = WebDAVRequestBuilder(collection: collection, kind: store.kind, username: store.username, password: store.secrets["password"]?.value)
        parser = MultistatusParser(maxDataBytes: store.maxRecordBytes)
        session = RemoteSession(configuration: store.session, delegate: self)
    }

    // MARK: - RemoteSource

    public func start(_ plan: PassPlan, sink: any RemoteSourceSink) {
        guard case .idle = phase else { preconditionFailure("WebDAVSource started twice") }
        self.plan = plan
        self.sink = sink
        let cursor = plan.cursor.flatMap { $0.isEmpty ? nil : $0 }
        mode = cursor == nil ? .initial : .incremental
        startSync(token: cursor ?? "", round: 1)
    }

    public func cancel() {
        if case .done = phase { return }
        phase = .done
        sink = nil
        session.cancelAll()
        inFlight.removeAll()
    }

    // MARK: - Requests

    private func startSync(token: String, round: Int) {
        phase = .syncing(round: round)
        // A sync from an empty token (and its continuations after truncation) returns every
        // member: asking for the data in the same REPORT saves a multiget per batch (Xandikos:
        // 10,000 cards in one 0.65 s answer instead of 100 multigets). Incremental syncs ask
        // for etags only and multiget the few changes. The answer is bounded by
        // SessionConfiguration.maxResponseBytes like any other.
        let fullSync = mode == .initial || mode == .resync
        send(builder.syncCollection(token: token, includeData: fullSync), for: .sync(token: token))
    }

    private func send(_ request: HTTPRequest, for purpose: Purpose) {
        do {
            let task = try session.start(request)
            inFlight[ObjectIdentifier(task)] = InFlight(purpose: purpose)
            requests += 1
        } catch {
            // Never call the sink inside start(): report on the next loop turn.
            let failure = SyncError(.transport(error.kind), store: store.name, url: request.url, message: "request not started: \(error.detail)")
            let box = UncheckedSendableBox(self)
            RunLoopHandle.current().perform { box.value.fail(failure) }
        }
    }

    // MARK: - RemoteSessionDelegate

    public func session(_ session: RemoteSession, task: TransferTask, didReceive head: ResponseHead) {}

    public func session(_ session: RemoteSession, task: TransferTask, didReceive data: Data) {
        inFlight[ObjectIdentifier(task)]?.body.append(data)
    }

    public func session(_ session: RemoteSession, task: TransferTask, didCompleteWith metrics: TransferMetrics) {
        guard let finished = inFlight.removeValue(forKey: ObjectIdentifier(task)), let head = task.head else { return }
        if case .done = phase { return }
        switch finished.purpose {
        case .sync(let token):
            handleSync(head: head, body: finished.body, sentToken: token)
        case .propfind:
            handlePropfind(head: head, body: finished.body)
        case .multiget(let batch):
            handleMultiget(head: head, body: finished.body, batch: batch)
        }
    }

    public func session(_ session: RemoteSession, task: TransferTask, didFailWith error: TransferError) {
        guard inFlight.removeValue(forKey: ObjectIdentifier(task)) != nil else { return }
        fail(SyncError(.transport(error.kind), store: store.name, url: error.url, position: positionDescription, message: "transfer failed: \(error.detail)"))
    }

    // MARK: - Sync phase

    private func handleSync(head: ResponseHead, body: Data, sentToken: String) {
        let url = head.url
        switch head.status {
        case 200, 207, 507:
            // A 200 is not what RFC 6578 answers, but a proxy's HTML error page comes as one:
            // parsing decides (an HTML page is a malformed response, not a status problem).
            let status: Multistatus
            do {
                status = try parser.parse(body, store: store.name, url: url)
            } catch {
                return fail(error)
            }
            if status.root == "error" || status.hasInvalidSyncToken {
                return handleSyncRefusal(status: head.status, errors: status.errors, sentToken: sentToken, url: url)
            }
            guard let newToken = status.syncToken, !newToken.isEmpty else {
                if head.status != 507 {
                    logger.info("no sync-token in the sync-collection answer, falling back to PROPFIND", metadata: ["store": "\(store.name)"])
                    return startFallback()
                }
                return fail(SyncError(.remote(code: "507"), store: store.name, url: url, position: positionDescription, message: "the server truncated the sync report (507) without a token to continue from"))
            }
            absorbSync(status)
            token = newToken
            if head.status == 507 || status.isTruncated {
                // A partial result: continue from the returned token until an answer is whole.
                truncatedRounds += 1
                guard newToken != sentToken else {
                    return fail(SyncError(.remote(code: "507"), store: store.name, url: url, position: positionDescription, message: "the server keeps truncating the sync report without advancing its token"))
                }
                guard case .syncing(let round) = phase else { return }
                logger.debug("sync report truncated, continuing", metadata: ["store": "\(store.name)", "round": "\(round)"])
                return startSync(token: newToken, round: round + 1)
            }
            beginFetching()
        case 400, 403, 405, 412, 501:
            // The body may say why (valid-sync-token); an unparseable body says nothing.
            let errors = (try? parser.parse(body))?.errors ?? []
            handleSyncRefusal(status: head.status, errors: errors, sentToken: sentToken, url: url)
        default:
            fail(statusError(head, body: body))
        }
    }

    private func handleSyncRefusal(status: Int, errors: [String], sentToken: String, url: String) {
        if errors.contains(DAVName.validSyncToken) {
            guard !sentToken.isEmpty, mode == .incremental else {
                return fail(SyncError(.remote(code: "valid-sync-token"), store: store.name, url: url, position: positionDescription, message: "the server refused even an empty sync-token (\(status))"))
            }
            // The token expired or the server lost its history: resync everything and list
            // every member so records deleted meanwhile are swept.
            logger.notice("sync-token refused, full resync with reconciliation", metadata: ["store": "\(store.name)", "status": "\(status)"])
            mode = .resync
            resetSyncState()
            return startSync(token: "", round: 1)
        }
        switch status {
        case 400, 403, 405, 501:
            logger.info("sync-collection not supported (\(status)), falling back to PROPFIND", metadata: ["store": "\(store.name)"])
            startFallback()
        default:
            fail(SyncError(.httpStatus(status), store: store.name, url: url, position: positionDescription, message: "sync-collection REPORT answered \(status)"))
        }
    }

    private func resetSyncState() {
        changedOrder = []
        changedHref = [:]
        deleted = []
        deletedSet = []
        inline = [:]
        token = nil
        truncatedRounds = 0
    }

    /// Merges one sync answer into the pass's change set; a later answer about a member wins.
    private func absorbSync(_ status: Multistatus) {
        for response in status.responses {
            for href in response.hrefs {
                guard let id = builder.collection.id(forHref: href), !href.hasSuffix("/") else { continue }
                switch response.effectiveStatus ?? 200 {
                case 404, 410:
                    if changedHref.removeValue(forKey: id) != nil { changedOrder.removeAll { $0 == id } }
                    if deletedSet.insert(id).inserted { deleted.append(id) }
                    inline[id] = nil
                case 200..<300:
                    if deletedSet.remove(id) != nil { deleted.removeAll { $0 == id } }
                    if changedHref.updateValue(href, forKey: id) == nil { changedOrder.append(id) }
                    inline[id] = response.data != nil || response.dataTooLarge ? response : nil
                default:
                    // 507 for the request-URI and the like: not a member state.
                    break
                }
            }
        }
    }

    // MARK: - Fallback

    private func startFallback() {
        mode = .fallback
        resetSyncState()
        phase = .listing
        send(builder.propfind(), for: .propfind)
    }

    private func handlePropfind(head: ResponseHead, body: Data) {
        guard head.status == 207 else { return fail(statusError(head, body: body)) }
        let status: Multistatus
        do {
            status = try parser.parse(body, store: store.name, url: head.url)
        } catch {
            return fail(error)
        }
        absorbSync(status)
        beginFetching()
    }

    // MARK: - Fetch phase

    private func beginFetching() {
        let toFetch = changedOrder.filter { inline[$0] == nil }
        let inlineIDs = changedOrder.filter { inline[$0] != nil }
        batches = stride(from: 0, to: toFetch.count, by: batchSize).map { start in
            toFetch[start..<min(start + batchSize, toFetch.count)].map { changedHref[$0]! }
        }
        if mode != .incremental {
            // A full listing of the collection: every member the server has now.
            guard deliverList(changedOrder) else { return }
        }
        if !batches.isEmpty {
            // Pipelining: the first multigets run while the inline batches are merged.
            phase = .fetching(batch: 0)
            requestMoreBatches()
        }
        // Records whose data came with the sync answer, in batches of the same size.
        let chunks = stride(from: 0, to: inlineIDs.count, by: batchSize).map { Array(inlineIDs[$0..<min($0 + batchSize, inlineIDs.count)]) }
        for (index, chunk) in chunks.enumerated() {
            var changes: [RecordChange] = []
            var problems: [RecordProblem] = []
            for id in chunk {
                append(inline[id]!, id: id, to: &changes, problems: &problems)
            }
            let isLast = batches.isEmpty && index == chunks.count - 1
            guard deliver(ChangeBatch(changes: takeDeletes() + changes, cursor: isLast ? finalCursor : nil, problems: problems, origin: builder.collection.url)) else { return }
            if isLast { return finishPass() }
        }
        inline = [:]
        if batches.isEmpty {
            let final = ChangeBatch(changes: takeDeletes(), cursor: finalCursor, origin: builder.collection.url)
            guard deliver(final) else { return }
            finishPass()
        }
    }

    /// The pass's deletes, once: they ride with the first batch handed over.
    private func takeDeletes() -> [RecordChange] {
        guard !deletesDelivered else { return [] }
        deletesDelivered = true
        return deleted.map { .delete(id: $0) }
    }

    private var finalCursor: String? {
        mode == .fallback ? nil : token
    }

    /// Keeps `fetchWindow` multigets in flight, counted from the oldest batch not yet handed over.
    private func requestMoreBatches() {
        guard case .fetching(let oldest) = phase else { return }
        while batchesRequested < batches.count, batchesRequested < oldest + Self.fetchWindow {
            send(builder.multiget(hrefs: batches[batchesRequested]), for: .multiget(batch: batchesRequested))
            batchesRequested += 1
        }
    }

    private func handleMultiget(head: ResponseHead, body: Data, batch: Int) {
        guard head.status == 207 else { return fail(statusError(head, body: body)) }
        do {
            answered[batch] = (try parser.parse(body, store: store.name, url: head.url), head.url)
        } catch {
            return fail(error)
        }
        while case .fetching(let oldest) = phase, let (status, url) = answered.removeValue(forKey: oldest) {
            let isLast = oldest == batches.count - 1
            // The next request goes out before this batch is merged.
            phase = .fetching(batch: oldest + 1)
            requestMoreBatches()
            var changes = takeDeletes()
            var problems: [RecordProblem] = []
            records(from: status, requested: batches[oldest], into: &changes, problems: &problems)
            let result = ChangeBatch(changes: changes, cursor: isLast ? finalCursor : nil, problems: problems, origin: url)
            guard deliver(result) else { return }
            if isLast { return finishPass() }
        }
    }

    /// Turns one multiget answer into changes and problems.
    private func records(from status: Multistatus, requested: [String], into changes: inout [RecordChange], problems: inout [RecordProblem]) {
        var missing = Set(requested.compactMap { builder.collection.id(forHref: $0) })
        for response in status.responses {
            for href in response.hrefs {
                guard let id = builder.collection.id(forHref: href) else { continue }
                missing.remove(id)
                append(response, id: id, to: &changes, problems: &problems)
            }
        }
        for id in missing.sorted() {
            problems.append(RecordProblem(position: status.responses.count, id: id, reason: "missing from the multiget answer"))
        }
    }

    /// Turns one member response carrying data into an upsert, a delete, or a problem.
    private func append(_ response: Multistatus.Response, id: String, to changes: inout [RecordChange], problems: inout [RecordProblem]) {
        let position = response.position
        switch response.effectiveStatus ?? 200 {
        case 404, 410:
            // Deleted between the sync report and the multiget.
            changes.append(.delete(id: id))
        case 200..<300:
            if response.dataTooLarge {
                problems.append(RecordProblem(position: position, id: id, reason: "larger than \(store.maxRecordBytes) bytes"))
            } else if let data = response.data {
                let body = Data(data.utf8)
                guard body.count <= store.maxRecordBytes else {
                    problems.append(RecordProblem(position: position, id: id, reason: "larger than \(store.maxRecordBytes) bytes"))
                    return
                }
                let fields = store.kind == .caldav ? CardFieldExtractor.fields(iCalendar: data) : CardFieldExtractor.fields(vCard: data)
                changes.append(.upsert(RemoteRecord(id: id, version: response.etag ?? "", body: body, fields: fields)))
            } else {
                problems.append(RecordProblem(position: position, id: id, reason: "no \(store.kind == .caldav ? "calendar-data" : "address-data") in the answer"))
            }
        case let other:
            problems.append(RecordProblem(position: position, id: id, reason: "status \(other)"))
        }
    }

    // MARK: - Ending

    private var positionDescription: String {
        switch phase {
        case .syncing(let round): "sync report \(round)"
        case .listing: "PROPFIND listing"
        case .fetching(let batch): "multiget batch \(batch)"
        case .idle, .done: ""
        }
    }

    /// Hands a batch over; false when the pass has ended (the sink threw or cancelled).
    private func deliver(_ batch: ChangeBatch) -> Bool {
        handOver { try $0.source(self, didProduce: batch) }
    }

    private func deliverList(_ ids: [String]) -> Bool {
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

    private func finishPass() {
        guard let sink else { return }
        let changedNothing = changedOrder.isEmpty && deleted.isEmpty
        let outcome = SourceOutcome(
            listingComplete: mode != .incremental,
            requests: requests,
            unchanged: mode == .incremental && changedNothing && token == plan.cursor
        )
        phase = .done
        self.sink = nil
        session.cancelAll()
        sink.source(self, didFinishWith: outcome)
    }

    private func fail(_ error: SyncError) {
        guard let sink else { return }
        phase = .done
        self.sink = nil
        session.cancelAll()
        inFlight.removeAll()
        sink.source(self, didFailWith: error)
    }

    private func statusError(_ head: ResponseHead, body: Data) -> SyncError {
        let status = head.status
        let retryAfter = head.headers["Retry-After"].flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }.map { Duration.seconds($0) }
        let kind: SyncError.Kind
        switch status {
        case 401: kind = .unauthorized
        case 429: kind = .rateLimited
        case 503 where retryAfter != nil: kind = .rateLimited
        default: kind = .httpStatus(status)
        }
        let snippet = String(decoding: body.prefix(200), as: UTF8.self).replacingOccurrences(of: "\n", with: " ")
        return SyncError(kind, store: store.name, url: head.url, position: positionDescription, message: "HTTP \(status)" + (snippet.isEmpty ? "" : ": \(snippet)"), retryAfter: retryAfter)
    }
}

/// Carries a value owned by one thread through a `@Sendable` closure that runs on that same
/// thread (a block posted to the creating run loop).
struct UncheckedSendableBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
