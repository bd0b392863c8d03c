import Foundation
import Logging

/// Pushes a CardDAV or CalDAV store's local changes with conditional requests, so a change
/// made on the server since the local base is a conflict, never overwritten (RFC 4918 §10.4,
/// RFC 6352 §6.3.2, RFC 4791 §5.3.2):
///
/// | local change | request                                   | 412 Precondition Failed      |
/// |--------------|-------------------------------------------|------------------------------|
/// | create       | `PUT` member, `If-None-Match: *`          | `GET` it: ours (the same text) or a conflict |
/// | update       | `PUT` member, `If-Match: <base ETag>`     | `GET` it: ours (the same text, sent before a crash) or a conflict (404: deleted there) |
/// | delete       | `DELETE` member, `If-Match: <base ETag>`  | `GET` it: a conflict         |
///
/// An update sent before without its answer (a crash, a lost answer) is looked at before it
/// is sent again: the member holding that send is the base of the next one, not a conflict.
/// A create sent before a crash lost its answer is looked at before anything is sent again:
/// the member holding what was sent is updated (the row changed since) or, when the row was
/// deleted, deleted with `If-Match`; a member changed by someone else since is a conflict.
///
/// A create's member is named after its UID (`<UID>.vcf` / `<UID>.ics`) unless the row was
/// inserted with an id of its own, so a create sent twice is the same member: idempotent.
/// A `PUT` answered with an `ETag` stored exactly what was sent; without one the server
/// changed it, and the member is read back. 400, 403, 409, 413, 415 and 422 refuse the change
/// (a server that finds the card invalid); anything else a pull would fail on stops the push.
///
/// Some servers ignore the preconditions (SOGo overwrites a member on `If-None-Match: *` and
/// deletes one whatever `If-Match` says). With ``WebDAVOptions/ReadBeforeWrite`` on, every
/// write first reads the member and decides there what a 412 would have decided (one more
/// request per write); the condition is still sent, for the servers that do check it.
final class WebDAVWriter: RemoteWriter {
    private let store: StoreConfiguration
    private let builder: WebDAVRequestBuilder
    private let content: WebDAVOptions.Content
    private let loader: HTTPPageLoader
    private let errorContext: HTTPStatusClassifier.Context
    /// Whether writes read the member first; nil until the server is identified (`auto`).
    private var readsFirst: Bool?
    private lazy var walk = PushWalk(of: self, loader: loader) { [unowned self] in self.next() }

    init(_ context: RemoteSourceContext, options: WebDAVOptions) throws(SyncError) {
        store = context.store
        guard let collection = WebDAVCollection(url: context.store.url) else {
            throw SyncError(.configuration, store: context.store.name, message: "not a collection URL: \(context.store.url.redactingUserInfo)")
        }
        builder = WebDAVRequestBuilder(collection: collection, kind: options.kind, authentication: options.authentication,
                                       headers: context.store.headers, query: context.store.query)
        content = options.content
        readsFirst = switch options.readBeforeWrite {
        case .always: true
        case .never: false
        case .auto: nil
        }
        // The builder adds the configured query itself.
        loader = HTTPPageLoader(configuration: context.store.session)
        errorContext = HTTPStatusClassifier.Context(context.store)
    }

    func start(_ changes: [LocalChange], sink: any RemoteWriterSink) { walk.start(changes, sink: sink) }

    func cancel() { walk.cancel() }

    /// The member id a create is stored under: the row's own id, or one made from the UID.
    func memberID(for change: LocalChange, body: String) -> String? {
        guard change.hasLocalID else { return change.id }
        guard let uid = ContentLineText.uid(in: body) else { return nil }
        return Self.memberName(forUID: uid, fileExtension: content == .addressBook ? "vcf" : "ics")
    }

    /// Characters a member name keeps as they are: servers list such a name back as it was
    /// sent, whatever they do with escapes (the set vdirsyncer trusts).
    private static let safeUIDCharacters = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-+@".unicodeScalars)

    /// The member name of a new record with this UID: the UID itself when every character is
    /// safe, else a name made from its digest (`uid-<16 hex>`). Servers list a name with `?`,
    /// `#`, a space, `%` or non-ASCII back escaped their own way (DAViCal refuses non-ASCII
    /// escapes outright), and a name listed back differently is another id: a phantom insert and
    /// delete, and a rebuild that deletes the row. Made from the UID alone, the same create sent
    /// twice names the same member.
    static func memberName(forUID uid: String, fileExtension: String) -> String {
        let safe = !uid.isEmpty && uid.utf8.count <= 200 && !uid.hasPrefix(".") && uid.unicodeScalars.allSatisfy(safeUIDCharacters.contains)
        let stem = safe ? uid : "uid-" + String(FNV1a.hash(uid.utf8), radix: 16).leftPadded(to: 16)
        return stem + "." + fileExtension
    }

    private func next() {
        guard let change = walk.upcoming.first else { return }
        guard let readsFirst else { return identifyServer { [self] in next() } }
        switch change.operation {
        case .create:
            guard let body = change.body ?? change.baseBody else { return walk.finish(change, .accepted(nil)) }
            guard let member = memberID(for: change, body: body) else { return walk.finish(change, .refused("the local body has no UID")) }
            guard change.body != nil else { return undoCreate(change, member: member, sent: body) }
            guard change.sent != nil, let sentBefore = change.baseBody else { return create(change, member: member, body: body) }
            resumeCreate(change, member: member, body: body, sentBefore: sentBefore)
        case .update:
            guard let body = change.body else { return walk.finish(change, .accepted(nil)) }
            // An update sent before without its answer recorded is looked at before it is sent
            // again: sending records the new text as the one sent, and a member that holds the
            // earlier send (landed, its answer lost) would then read as another client's change.
            guard readsFirst || change.sent != nil else { return update(change, member: change.id, body: body, on: change.baseVersion) }
            fetch(change.id) { [self] remote in
                guard let remote, Self.unchanged(remote, since: change) else { return updateMet(change, body: body, remote: remote) }
                // The earlier send may still be at work on the server: sending now records this
                // text as the one sent, and that send landing after it would read as a conflict.
                if change.sendMayStillLand() { return walk.postpone(change) }
                update(change, member: change.id, body: body, on: change.baseVersion)
            }
        case .delete where change.baseVersion == "":
            // Based on no version the server has (a create undone after someone changed what
            // it made): the member as it is now meets the store's conflict policy.
            fetch(change.id) { [self] remote in walk.finish(change, remote.map { .conflict(remote: $0) } ?? .accepted(nil)) }
        case .delete where readsFirst:
            fetch(change.id) { [self] remote in
                guard let remote, Self.unchanged(remote, since: change) else { return deleteMet(change, remote: remote) }
                delete(change)
            }
        case .delete:
            delete(change)
        }
    }

    /// Learns whether this server keeps its preconditions, from its `Server` header: SOGo's
    /// application server (SOPE) names itself there and ignores `If-None-Match: *` and a
    /// `DELETE`'s `If-Match`.
    private func identifyServer(then: @escaping () -> Void) {
        loader.load(builder.propfindCollection(), configuredQuery: false) { [self] result in
            switch result {
            case .failure(let error): walk.fail(SyncError(error, store: store))
            case .success(let page):
                guard (200..<300).contains(page.head.status) else { return walk.fail(page.statusError(target: .configuredURL, context: errorContext)) }
                readsFirst = Self.ignoresPreconditions(server: page.head.headers["Server"])
                then()
            }
        }
    }

    /// Servers known to ignore `If-None-Match: *` or a `DELETE`'s `If-Match`, by their
    /// `Server` header.
    static func ignoresPreconditions(server: String?) -> Bool {
        guard let server else { return false }
        return server.hasPrefix("SOPE/") || server.hasPrefix("SOPE ")
    }

    /// `DELETE` with `If-Match`; a 412 reads the member and decides there.
    private func delete(_ change: LocalChange) {
        send("DELETE", change.id, body: nil, condition: change.baseVersion.map { ("If-Match", $0) }, for: change) { [self] _ in
            walk.finish(change, .accepted(nil))
        } onConflict: { [self] in
            fetch(change.id) { [self] remote in deleteMet(change, remote: remote) }
        }
    }

    /// A delete whose member is not at its base version: gone already (done), holding an
    /// earlier send of ours, or changed by someone else (a conflict).
    private func deleteMet(_ change: LocalChange, remote: RemoteRecord?) {
        guard let remote else { return walk.finish(change, .accepted(nil)) }
        walk.finish(change, PushWalk.resumption(of: change, remote: remote, holds: Self.holds) ?? .conflict(remote: remote))
    }

    /// `PUT` with `If-None-Match: *`, recording first what is sent; a server that ignores the
    /// condition is asked first whether the member exists.
    private func create(_ change: LocalChange, member: String, body: String) {
        guard readsFirst != true else {
            return fetch(member) { [self] remote in
                guard let remote else { return put(change, member: member, body: body) }
                createMet(change, body: body, remote: remote)
            }
        }
        put(change, member: member, body: body)
    }

    private func put(_ change: LocalChange, member: String, body: String) {
        // Recorded with the member it names, so a pull that lists that member removed before
        // this send's answer is known tells it landed and was deleted by another client.
        switch walk.willSendCreate(change, body: body, remoteID: member) {
        case .send: break
        case .skipped: return walk.finish(change, .accepted(nil))
        case .stopped: return
        }
        send("PUT", member, body: body, condition: ("If-None-Match", "*"), for: change) { [self] page in
            stored(page, member: member, sent: body, change: change)
        } onConflict: { [self] in
            fetch(member) { [self] remote in createMet(change, body: body, remote: remote) }
        }
    }

    /// A create whose member exists: ours (the same text) or another client's (a conflict).
    private func createMet(_ change: LocalChange, body: String, remote: RemoteRecord?) {
        guard let remote else { return walk.finish(change, .conflict(remote: nil)) }
        walk.finish(change, Self.sameText(remote.body, body) ? .accepted(remote) : .conflict(remote: remote))
    }

    /// A create sent before without its answer recorded: what that send made is looked at
    /// before anything is sent again, because sending again records the new text as the one
    /// sent, and the member may hold the old. The member holding the row's text is done; the
    /// text sent then (the row changed since) is updated with `If-Match`; anything else is a
    /// conflict. No member: created now, unless the lost send may still land.
    private func resumeCreate(_ change: LocalChange, member: String, body: String, sentBefore: String) {
        fetch(member) { [self] remote in
            guard let remote else {
                // Landed and deleted by another client (a pull listed the member removed since):
                // their delete meets this create as a conflict.
                if change.removedSinceSent { return walk.finish(change, .conflict(remote: nil)) }
                // Not there yet, or never: a send still at work may land, and a pull's diff says
                // whether it landed and went. Until a pull has read past the send, it waits.
                if change.sendMayStillLand() || !change.pulledSinceSent { return walk.postpone(change) }
                return create(change, member: member, body: body)
            }
            if Self.sameText(remote.body, body) { return walk.finish(change, .accepted(remote)) }
            guard Self.holdsOurSend(remote, of: change, created: sentBefore) else { return walk.finish(change, .conflict(remote: remote)) }
            update(change, member: member, body: body, on: remote.version)
        }
    }

    /// A create whose row was deleted here after it was sent: what the send made must go too.
    /// The member holding what was sent becomes a delete of its ETag; one changed by someone
    /// else since, a delete that meets the store's conflict policy rather than erasing that
    /// change. No member while the send may still land: it waits, as dropping the delete then
    /// would leave the member on the server.
    private func undoCreate(_ change: LocalChange, member: String, sent: String) {
        fetch(member) { [self] remote in
            guard let remote else {
                let mayLand = change.sendMayStillLand() && !change.removedSinceSent
                return mayLand ? walk.postpone(change) : walk.finish(change, .accepted(nil))
            }
            walk.finish(change, .acceptedEarlierSend(remote, sent: Self.holdsOurSend(remote, of: change, created: sent) ? nil : sent))
        }
    }

    /// `PUT` with `If-Match`, recorded first with what it sends; a 412 is a conflict unless
    /// the member holds this very text or an earlier send's (sent before a crash or a lost
    /// answer, and applied): then it is done, or pushed again on top of what that send made.
    private func update(_ change: LocalChange, member: String, body: String, on version: String?) {
        // Recorded for a create resumed this way too: its answer may be lost as well, and the
        // next resume must know this text for ours.
        guard walk.willSendUpdates([UpdateSend(change, on: version ?? "", body: body)]) else { return }
        send("PUT", member, body: body, condition: version.map { ("If-Match", $0) }, for: change) { [self] page in
            stored(page, member: member, sent: body, change: change)
        } onConflict: { [self] in
            fetch(member) { [self] remote in updateMet(change, body: body, remote: remote) }
        }
    }

    /// An update whose member is not at its base version: gone (a conflict with the delete),
    /// holding this text or an earlier send's (done, or pushed on top of it), or changed by
    /// someone else (a conflict).
    private func updateMet(_ change: LocalChange, body: String, remote: RemoteRecord?) {
        guard let remote else { return walk.finish(change, .conflict(remote: nil)) }
        if Self.sameText(remote.body, body) { return walk.finish(change, .accepted(remote)) }
        walk.finish(change, PushWalk.resumption(of: change, remote: remote, holds: Self.holds) ?? .conflict(remote: remote))
    }

    /// Whether a member holds what this create sent: its first text, or the update a resume
    /// sent on top of it (answers of both may have been lost).
    static func holdsOurSend(_ remote: RemoteRecord, of change: LocalChange, created: String) -> Bool {
        sameText(remote.body, created) || change.sentBody.map { sameText(remote.body, $0) } == true
    }

    /// Whether a member read before a write is the one the change was made on: at its base
    /// version, with its content. SOGo's ETags are counters that start again when a member is
    /// deleted and made again, so another client's card can come back at the ETag the replica
    /// knew; only its content tells.
    static func unchanged(_ remote: RemoteRecord, since change: LocalChange) -> Bool {
        guard remote.version == change.baseVersion else { return false }
        return change.baseBody.map { sameText(remote.body, $0) } ?? true
    }

    /// Whether a member holds a text, as ``sameText(_:_:)`` compares.
    static func holds(_ remote: RemoteRecord, _ text: String) -> Bool { sameText(remote.body, text) }

    /// After a successful PUT: the record as stored, from the answer's ETag or read back.
    private func stored(_ page: HTTPPageLoader.Page, member: String, sent: String, change: LocalChange) {
        if let etag = page.head.headers["ETag"], !etag.hasPrefix("W/") {
            let body = DAVBodyForm.replica(Data(sent.utf8))
            let fields = try? CardFieldExtractor.fields(of: body, kind: builder.kind)
            return walk.finish(change, .accepted(RemoteRecord(id: member, version: etag, body: body, fields: fields)))
        }
        fetch(member) { [self] remote in walk.finish(change, remote.map { .accepted($0) } ?? .conflict(remote: nil)) }
    }

    private func request(_ method: String, _ member: String, body: String?) -> HTTPRequest {
        var request = HTTPRequest(method: method, url: builder.collection.url(forHref: builder.collection.href(forID: member)))
        if let body {
            request.headers.set("Content-Type", content == .addressBook ? "text/vcard; charset=utf-8" : "text/calendar; charset=utf-8")
            request.body = DAVBodyForm.wire(body)
        }
        builder.authorize(&request)
        return request
    }

    /// A conditional write, its answer classified by ``WriteAnswer``: accepted is `then`, 412
    /// is `onConflict`, gone is done for a `DELETE` and meets the delete otherwise, a refusal
    /// refuses the change, anything else stops the push.
    private func send(_ method: String, _ member: String, body: String?, condition: (String, String)?, for change: LocalChange,
                      then: @escaping (HTTPPageLoader.Page) -> Void, onConflict: @escaping () -> Void = {}) {
        var request = request(method, member, body: body)
        if let (name, value) = condition { request.headers.set(name, value) }
        loader.load(request, configuredQuery: false) { [self] result in
            switch result {
            case .failure(let error): walk.fail(SyncError(error, store: store))
            case .success(let page):
                let answer = WriteAnswer.http(status: page.head.status, reason: ErrorBodySnippet.summary(
                    of: page.body, contentType: page.head.headers["Content-Type"], redacting: errorContext.secrets))
                switch answer {
                case .accepted: then(page)
                case .changedSince: onConflict()
                case .gone where method == "DELETE": then(page)
                case .gone: walk.finish(change, WriteAnswer.goneResult(for: change.operation))
                case .refused(let reason): walk.finish(change, .refused(reason))
                case .failed: walk.fail(page.statusError(target: .derivedURL, context: errorContext))
                }
            }
        }
    }

    /// The member as the server holds it; nil when it has none.
    private func fetch(_ member: String, then: @escaping (RemoteRecord?) -> Void) {
        loader.load(request("GET", member, body: nil), configuredQuery: false) { [self] result in
            switch result {
            case .failure(let error): walk.fail(SyncError(error, store: store))
            case .success(let page):
                if page.head.status == 404 || page.head.status == 410 { return then(nil) }
                guard (200..<300).contains(page.head.status) else {
                    return walk.fail(page.statusError(target: .derivedURL, context: errorContext))
                }
                let body = DAVBodyForm.replica(page.body)
                let fields = try? CardFieldExtractor.fields(of: body, kind: builder.kind)
                then(RemoteRecord(id: member, version: page.head.headers["ETag"] ?? "", body: body, fields: fields))
            }
        }
    }

    /// Whether two vCard/iCalendar texts hold the same record, as servers store what they are
    /// sent (``ContentLineComparison``).
    static func sameText(_ stored: Data, _ sent: String) -> Bool {
        ContentLineComparison.same(String(decoding: stored, as: UTF8.self), sent)
    }
}

private extension String {
    func leftPadded(to width: Int) -> String { count >= width ? self : String(repeating: "0", count: width - count) + self }
}

extension WebDAVOptions {
    public func makeWriter(_ context: RemoteSourceContext) throws(SyncError) -> any RemoteWriter {
        try WebDAVWriter(context, options: self)
    }
}
