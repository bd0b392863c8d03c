import Foundation
import Logging

/// Pushes a JSON collection store's local changes with the store's templates
/// (``JSONPushTemplates``), one record at a time:
///
/// | local change | request                                                        | remote changed meanwhile     |
/// |--------------|----------------------------------------------------------------|------------------------------|
/// | create       | `push-create` with the object, `Idempotency-Key`                | -                            |
/// | update       | `push-update`: PATCH a merge patch, or PUT the object           | 412 (If-Match), or a newer version read first: a conflict |
/// | delete       | `push-delete`                                                   | the same                     |
///
/// The answer to a create or an update is the record as the API now holds it (its id and
/// version at `id-field` and `version-field`); an answer without one (204) is followed by a GET
/// of the record's update URL. A 400, 403, 409, 413, 415 or 422 refuses the change; anything a
/// pull would fail on stops the push.
final class JSONCollectionWriter: RemoteWriter {
    private let store: StoreConfiguration
    private let options: JSONCollectionOptions
    private let headers: HTTPHeaders
    private let loader: HTTPPageLoader
    private let scanner: JSONRecordScanner
    private let errorContext: HTTPStatusClassifier.Context
    private lazy var walk = PushWalk(of: self, loader: loader) { [unowned self] in self.next() }

    init(_ context: RemoteSourceContext, options: JSONCollectionOptions) {
        store = context.store
        self.options = options
        var headers = HTTPHeaders()
        headers.set("Accept", "application/json")
        if let authorization = options.authentication.authorization { headers.set("Authorization", authorization) }
        context.store.headers.apply(to: &headers)
        self.headers = headers
        loader = HTTPPageLoader(configuration: context.store.session, query: context.store.query)
        scanner = JSONRecordScanner(layout: options.recordLayout(recordsPath: ""))
        errorContext = HTTPStatusClassifier.Context(context.store)
    }

    func start(_ changes: [LocalChange], sink: any RemoteWriterSink) { walk.start(changes, sink: sink) }

    func cancel() { walk.cancel() }

    private var templates: JSONPushTemplates { options.push }

    private func next() {
        guard let change = walk.upcoming.first else { return }
        switch change.operation {
        case .create: pushCreate(change)
        case .update: pushUpdate(change)
        case .delete: pushDelete(change)
        }
    }

    private func pushCreate(_ change: LocalChange) {
        guard let template = templates.create else { return walk.finish(change, .refused("no push-create in the store's section")) }
        guard let body = change.body else { return undoCreate(change, template: template) }
        guard let local = JSONValue.object(parsing: body) else { return walk.finish(change, .refused("the local body is not a JSON object")) }
        let sent = JSONValue.encode(local.filter { $0.key != options.idField })
        // An API that keeps the key answers every later send with the record the first that
        // landed made: the body recorded stays the first send's, and the answer is compared
        // with it (``changedSinceEarlierSend``). Recording this send's instead, a row changed
        // after a send whose answer was lost, then sent again with its answer lost too, would
        // take the earlier record for its own and lose the change.
        let recorded = change.sent == nil ? nil : change.baseBody
        switch walk.willSendCreate(change, body: recorded ?? String(decoding: sent, as: UTF8.self)) {
        case .send: break
        case .skipped: return walk.finish(change, .accepted(nil))
        case .stopped: return
        }
        var request = request(template.method, template.url(store: store.url, id: nil), body: sent)
        // The same key for every send of this create: the outbox entry's placeholder id.
        request.headers.set("Idempotency-Key", "ferry-\(store.name)-\(change.id)")
        send(request, for: change) { [self] page in
            // An API that saw the Idempotency-Key before answers with the record an earlier send
            // made; the row may have changed since: that record becomes the base of an update.
            if templates.update != nil, let created = record(page.body),
               let answered = JSONValue.object(parsing: String(decoding: created.body, as: UTF8.self)),
               Self.changedSinceEarlierSend(change, local: local, answered: answered, idField: options.idField) {
                return walk.finish(change, .acceptedEarlierSend(created, sent: nil))
            }
            answered(page, for: change, id: nil)
        }
    }

    /// Whether a create's answer is the record an earlier send made with the row as it was
    /// then, the row having changed since: some member the row changed after that send
    /// (`baseBody`, recorded before it went out) is not in the answer as the row holds it.
    /// Only what the row changed counts: the answer differs from what was sent by the members
    /// the API writes itself (an `updated_at` it stamps, a default it fills), and taking those
    /// for a change of ours pushes an update that sets them back, after which a lost answer
    /// reads the record as another writer's (and keep-both copies it twice).
    static func changedSinceEarlierSend(_ change: LocalChange, local: [String: JSONValue], answered: [String: JSONValue], idField: String) -> Bool {
        guard change.sent != nil, let before = change.baseBody.flatMap(JSONValue.object(parsing:)) else { return false }
        let now = local.filter { $0.key != idField }
        let changed = now.filter { before[$0.key] != $0.value }
        let removed = before.keys.filter { now[$0] == nil }
        return changed.contains { answered[$0.key] != $0.value } || removed.contains { answered[$0] != nil }
    }

    /// A create whose row was deleted here after it was sent, its answer lost: what the send
    /// made must go too. The same send again, under the same Idempotency-Key, makes an API
    /// that keeps keys answer with the record the first send made (or make it now, if the
    /// first never arrived); that record is then deleted like any other, by the next round.
    private func undoCreate(_ change: LocalChange, template: JSONPushTemplates.Template) {
        guard change.sent != nil, let sent = change.baseBody, templates.delete != nil else { return walk.finish(change, .accepted(nil)) }
        var request = request(template.method, template.url(store: store.url, id: nil), body: Data(sent.utf8))
        request.headers.set("Idempotency-Key", "ferry-\(store.name)-\(change.id)")
        send(request, for: change) { [self] page in
            guard let made = record(page.body) else {
                return walk.fail(SyncError(.malformedResponse, store: store.name, url: page.url,
                                           message: "the create was answered without the record (no \(options.recordFieldNames)): Ferry cannot tell its id"))
            }
            walk.finish(change, .acceptedEarlierSend(made, sent: nil))
        }
    }

    private func pushUpdate(_ change: LocalChange) {
        guard let template = templates.update else { return walk.finish(change, .refused("no push-update in the store's section")) }
        guard let body = change.body, let local = JSONValue.object(parsing: body) else {
            return walk.finish(change, .refused("the local body is not a JSON object"))
        }
        let payload: Data
        if template.method == "PATCH" {
            let base = change.baseBody.flatMap(JSONValue.object(parsing:)) ?? [:]
            payload = JSONValue.encode(Self.mergePatch(from: base, to: local))
        } else {
            payload = Data(body.utf8)
        }
        conditionally(change) { [self] in
            guard walk.willSendUpdates([UpdateSend(change, on: change.baseVersion ?? "", body: body)]) else { return }
            send(request(template.method, template.url(store: store.url, id: change.id), body: payload, ifMatch: change.baseVersion), for: change) { [self] page in
                answered(page, for: change, id: change.id)
            }
        }
    }

    private func pushDelete(_ change: LocalChange) {
        guard let template = templates.delete else { return walk.finish(change, .refused("no push-delete in the store's section")) }
        conditionally(change) { [self] in
            send(request(template.method, template.url(store: store.url, id: change.id), body: nil, ifMatch: change.baseVersion), for: change,
                 missingIsDone: true) { [self] _ in
                walk.finish(change, .accepted(nil))
            }
        }
    }

    /// Without If-Match the record is read first: a version other than the base is a conflict,
    /// unless it holds an earlier send of the change. An update sent before without its answer
    /// recorded is read first with If-Match too: sending it again records the new body as the
    /// one sent, and the record holding the earlier send (landed, its answer lost) would then
    /// read as another writer's change.
    private func conditionally(_ change: LocalChange, then: @escaping () -> Void) {
        guard !templates.ifMatch || (change.operation == .update && change.sent != nil) else { return then() }
        fetch(change.id) { [self] remote in
            guard let remote else { return walk.finish(change, change.operation == .delete ? .accepted(nil) : .conflict(remote: nil)) }
            guard remote.version == change.baseVersion else {
                return walk.finish(change, PushWalk.resumption(of: change, remote: remote, holds: holds(change)) ?? .conflict(remote: remote))
            }
            // The earlier send may still be at work on the server: sending now records this
            // body as the one sent, and that send landing after it would read as a conflict.
            if change.operation == .update, change.sendMayStillLand() { return walk.postpone(change) }
            then()
        }
    }

    /// Whether the API's record holds a body this store sent (an API may add members of its
    /// own). For an update's send (the change is that update, or a delete that followed it),
    /// what the send changed is compared: each member that differs from the body the update was
    /// made on has the sent value, and each it removed is gone; the others may have changed
    /// since (a member the API stamps on every write: with `version-field = none` nothing tells
    /// such a stamp from a field). For a create's, every member but the id and the version.
    private func holds(_ change: LocalChange) -> (RemoteRecord, String) -> Bool {
        let base = change.operation != .create ? change.baseBody.flatMap(JSONValue.object(parsing:)) : nil
        return { [options] remote, sent in
            guard let sent = JSONValue.object(parsing: sent),
                  let theirs = JSONValue.object(parsing: String(decoding: remote.body, as: UTF8.self)) else { return false }
            let ownFields = [options.idField, options.versionField]
            guard let base else {
                return sent.allSatisfy { key, value in ownFields.contains(key) || theirs[key] == value }
            }
            return sent.allSatisfy { key, value in ownFields.contains(key) || base[key] == value || theirs[key] == value }
                && base.keys.allSatisfy { key in sent[key] != nil || ownFields.contains(key) || theirs[key] == nil }
        }
    }

    /// RFC 7396: the members that changed, `null` for those removed.
    static func mergePatch(from base: [String: JSONValue], to local: [String: JSONValue]) -> [String: JSONValue] {
        var patch: [String: JSONValue] = [:]
        for (key, value) in local where base[key] != value { patch[key] = value }
        for key in base.keys where local[key] == nil { patch[key] = .null }
        return patch
    }

    /// The record a create or an update answered with, or read back when the answer has none.
    private func answered(_ page: HTTPPageLoader.Page, for change: LocalChange, id: String?) {
        if let record = record(page.body) { return walk.finish(change, .accepted(record)) }
        guard let id else {
            return walk.fail(SyncError(.malformedResponse, store: store.name, url: page.url,
                                  message: "the create was answered without the record (no \(options.recordFieldNames)): Ferry cannot tell its id"))
        }
        fetch(id) { [self] remote in walk.finish(change, remote.map { .accepted($0) } ?? .conflict(remote: nil)) }
    }

    private func record(_ body: Data) -> RemoteRecord? {
        guard !body.isEmpty else { return nil }
        var wrapped = Data("[".utf8)
        wrapped.append(body)
        wrapped.append(Data("]".utf8))
        guard let page = try? scanner.scan(wrapped), page.records.count == 1,
              case .record(let record) = page.records[0].outcome(in: wrapped, maxBytes: store.maxRecordBytes, position: 0),
              !record.version.isEmpty else { return nil }
        return record
    }

    private func request(_ method: String, _ url: String, body: Data?, ifMatch version: String? = nil) -> HTTPRequest {
        var request = HTTPRequest(method: method, url: url, headers: headers, body: body)
        if body != nil { request.headers.set("Content-Type", method == "PATCH" ? "application/merge-patch+json" : "application/json") }
        if templates.ifMatch, let version {
            request.headers.set("If-Match", version.hasPrefix("\"") || version.hasPrefix("W/") ? version : "\"\(version)\"")
        }
        return request
    }

    private func fetch(_ id: String, then: @escaping (RemoteRecord?) -> Void) {
        guard let template = templates.update ?? templates.delete else { return then(nil) }
        loader.load(request("GET", template.url(store: store.url, id: id), body: nil)) { [self] result in
            switch result {
            case .failure(let error): walk.fail(SyncError(error, store: store))
            case .success(let page):
                if page.head.status == 404 || page.head.status == 410 { return then(nil) }
                guard (200..<300).contains(page.head.status) else { return walk.fail(page.statusError(target: .derivedURL, context: errorContext)) }
                guard let record = record(page.body) else {
                    return walk.fail(SyncError(.malformedResponse, store: store.name, url: page.url,
                                          message: "the record was answered without \(options.recordFieldNames)"))
                }
                then(record)
            }
        }
    }

    private func send(_ request: HTTPRequest, for change: LocalChange, missingIsDone: Bool = false,
                      then: @escaping (HTTPPageLoader.Page) -> Void) {
        loader.load(request) { [self] result in
            switch result {
            case .failure(let error): walk.fail(SyncError(error, store: store))
            case .success(let page):
                let answer = WriteAnswer.http(status: page.head.status, reason: ErrorBodySnippet.summary(
                    of: page.body, contentType: page.head.headers["Content-Type"], redacting: errorContext.secrets))
                switch answer {
                case .accepted: then(page)
                case .changedSince:
                    fetch(change.id) { [self] remote in
                        guard let remote else { return walk.finish(change, WriteAnswer.goneResult(for: change.operation)) }
                        walk.finish(change, PushWalk.resumption(of: change, remote: remote, holds: holds(change)) ?? .conflict(remote: remote))
                    }
                case .gone where missingIsDone: then(page)
                case .gone: walk.finish(change, .conflict(remote: nil))
                case .refused(let reason): walk.finish(change, .refused(reason))
                case .failed: walk.fail(page.statusError(target: .derivedURL, context: errorContext))
                }
            }
        }
    }

}
