import Foundation
import Logging

/// Pushes a Parse store's local changes in the fewest requests that keep concurrent writers
/// safe (Parse has no conditional writes). Up to 50 changes go together: one query reads the
/// objects they change, one `/batch` writes them, one query reads back what was written, so
/// the replica holds exactly what the remote does. What each change does:
///
/// - update: `PUT` only the fields changed locally, numbers changed by a delta as `Increment`
///   (``ParseFieldMerge``), three-way against the remote when it changed since the base; a
///   field changed on both sides to different values is a conflict.
/// - create: `POST`. Before a create is sent its body is recorded
///   (``RemoteWriterSink/writer(_:willSendCreate:body:remoteID:)``): a create found sent but
///   unanswered after a crash is first looked up alone, by the objectId it chose
///   (`object-ids = client`) or by its fields and creation time, and adopted when found, so a
///   crash between Parse's acceptance and the local commit makes no duplicate; its row changed
///   since becomes an update of it, its row deleted since a delete.
/// - delete: `DELETE` when the remote still has the base version; a record already gone is
///   done.
///
/// A Parse error answer about the object (`{"code":N}` with 400) is a refusal of that change;
/// credentials, rate limits and server failures stop the push, as they stop a pull.
final class ParseWriter: RemoteWriter {
    private let store: StoreConfiguration
    private let endpoint: ParseEndpoint
    private let objectIDs: ParseOptions.ObjectIDs
    private let loader: HTTPPageLoader
    private let errorContext: HTTPStatusClassifier.Context
    private lazy var walk = PushWalk(of: self, loader: loader) { [unowned self] in self.next() }
    private let objectsScanner = JSONRecordScanner(layout: .init(recordsPath: "results", idPath: "objectId", versionPath: "updatedAt"))
    /// How far before a lost create's recorded send time its lookup reaches (clock skew
    /// between this machine and the Parse server).
    static let lookupSkew: TimeInterval = 300

    init(_ context: RemoteSourceContext, options: ParseOptions) {
        store = context.store
        endpoint = ParseEndpoint(store: context.store, options: options)
        objectIDs = options.objectIDs
        loader = HTTPPageLoader(configuration: context.store.session, query: context.store.query)
        errorContext = HTTPStatusClassifier.Context(context.store)
    }

    func start(_ changes: [LocalChange], sink: any RemoteWriterSink) { walk.start(changes, sink: sink) }

    func cancel() { walk.cancel() }

    private func next() {
        let upcoming = walk.upcoming
        guard let first = upcoming.first else { return }
        let batch = upcoming.prefix(ParseEndpoint.batchLimit).prefix { batchable($0) }
        if !batch.isEmpty { return pushBatch(Array(batch)) }
        // A create sent before without an answer (looked up first), or one deleted since.
        pushCreate(first)
    }

    /// Whether a change goes in a batch: all but creates sent before without an answer. Those
    /// are looked for first, even with ids the client chooses (where sending again would name
    /// the same object): sending again records the new body as the one sent, while the object
    /// may hold the old one.
    func batchable(_ change: LocalChange) -> Bool {
        change.operation != .create || change.sent == nil
    }

    private var clientIDs: Bool { objectIDs == .client }

    /// The objectId a create names its object with, when the client chooses: the one an
    /// earlier send chose, else the row's own id, else a new one in Parse's form.
    static func clientID(for change: LocalChange) -> String {
        if let chosen = change.sentVersion { return chosen }
        if !change.hasLocalID { return change.id }
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        return String((0..<10).map { _ in alphabet.randomElement()! })
    }

    // MARK: - Batches

    private func pushBatch(_ chunk: [LocalChange]) {
        let known = chunk.filter { $0.operation != .create }.map(\.id)
        fetchMany(known) { [self] remotes in
            var decided: [Int: PushResult] = [:]
            var requests: [(position: Int, request: JSONValue)] = []
            var sends: [UpdateSend] = []
            for (position, change) in chunk.enumerated() {
                switch change.operation {
                case .update:
                    guard let remote = remotes[change.id] else { decided[position] = .conflict(remote: nil); continue }
                    guard let local = change.body.flatMap(JSONValue.object(parsing:)) else {
                        decided[position] = .refused("the local body is not a JSON object")
                        continue
                    }
                    var base = change.baseBody.flatMap(JSONValue.object(parsing:)) ?? [:]
                    let theirs = remote.version == change.baseVersion ? nil : JSONValue.object(parsing: String(decoding: remote.body, as: UTF8.self))
                    // The remote holds an earlier send of this change (its answer lost): what
                    // that send made is the base, so it is neither a conflict nor sent twice.
                    let landed = theirs.flatMap { Self.landedSend(of: change, remote: $0) }
                    if let landed { base = landed }
                    // An earlier send whose answer was lost may still be at work on the server:
                    // sending now records this body as the one sent, and that send landing after
                    // it would read as another writer's change. It stays queued until settled.
                    if theirs == nil, change.sendMayStillLand() { continue }
                    switch ParseFieldMerge.update(base: base, local: local, remote: theirs) {
                    case .conflict: decided[position] = .conflict(remote: remote)
                    case .update(let fields) where fields.isEmpty: decided[position] = .accepted(remote)
                    case .update(let fields):
                        if Self.increments(fields) {
                            // An earlier send of this change may have applied (the remote moved
                            // past the version it was sent on): sending the increment again could
                            // count it twice, and Parse cannot say. Both sides go to the policy.
                            if landed == nil, let sentVersion = change.sentVersion, sentVersion != remote.version {
                                decided[position] = .conflict(remote: remote)
                                continue
                            }
                        }
                        sends.append(UpdateSend(change, on: remote.version, body: String(decoding: JSONValue.encode(local), as: UTF8.self)))
                        requests.append((position, Self.batched("PUT", endpoint.batchPath(change.id), body: fields)))
                    }
                case .delete:
                    guard let remote = remotes[change.id] else { decided[position] = .accepted(nil); continue }
                    if remote.version != change.baseVersion {
                        // Deleted here after an update whose answer was lost: the object holding
                        // exactly that send is ours to delete; anything else is another writer's.
                        let theirs = JSONValue.object(parsing: String(decoding: remote.body, as: UTF8.self)) ?? [:]
                        let sent = change.sent == nil ? nil : change.sentBody.flatMap(JSONValue.object(parsing:))
                        guard let sent, ParseFieldMerge.create(local: sent) == ParseFieldMerge.create(local: theirs) else {
                            decided[position] = .conflict(remote: remote)
                            continue
                        }
                    }
                    requests.append((position, Self.batched("DELETE", endpoint.batchPath(change.id), body: nil)))
                case .create:
                    guard let local = change.body.flatMap(JSONValue.object(parsing:)) else {
                        decided[position] = .refused("the local body is not a JSON object")
                        continue
                    }
                    var object = ParseFieldMerge.create(local: local)
                    let chosen = clientIDs ? Self.clientID(for: change) : nil
                    switch walk.willSendCreate(change, body: String(decoding: JSONValue.encode(object), as: UTF8.self), remoteID: chosen) {
                    case .send: break
                    case .skipped:
                        decided[position] = .accepted(nil)
                        continue
                    case .stopped: return
                    }
                    if let chosen { object["objectId"] = .string(chosen) }
                    requests.append((position, Self.batched("POST", endpoint.batchPath(nil), body: object)))
                }
            }
            guard !requests.isEmpty else { return report(chunk, decided) }
            guard walk.willSendUpdates(sends) else { return }
            let body = JSONValue.encode(["requests": .array(requests.map(\.request))])
            loader.load(endpoint.request("POST", endpoint.batchURL, json: body)) { [self] result in
                let page: HTTPPageLoader.Page
                switch result {
                case .failure(let error): return walk.fail(SyncError(error, store: store))
                case .success(let loaded): page = loaded
                }
                guard (200..<300).contains(page.head.status) else { return walk.fail(statusError(page)) }
                guard case .array(let answers)? = try? JSONDecoder().decode(JSONValue.self, from: page.body), answers.count == requests.count else {
                    return walk.fail(SyncError(.malformedResponse, store: store.name, url: page.url,
                                          message: "Parse answered a batch of \(requests.count) without one answer per request"))
                }
                var written: [Int: String] = [:]
                var taken: [Int: String] = [:]
                for (answer, (position, _)) in zip(answers, requests) {
                    let change = chunk[position]
                    guard case .object(let members) = answer else { continue }
                    if case .object(let success)? = members["success"] {
                        if change.operation == .delete {
                            decided[position] = .accepted(nil)
                        } else if case .string(let id)? = success["objectId"] ?? .string(change.id) {
                            written[position] = id
                        }
                    } else if case .object(let error)? = members["error"] {
                        let code = error["code"]?.numeric.map { Int($0) } ?? 0
                        // 137 for a create naming its own objectId: another object has that id
                        // (an earlier send of this create is looked for before it is sent again).
                        if code == 137, change.operation == .create, clientIDs, case .object(let sent)? = requests.first(where: { $0.position == position })?.request,
                           case .object(let body)? = sent["body"], case .string(let id)? = body["objectId"] {
                            taken[position] = id
                            continue
                        }
                        let words: String = if case .string(let text)? = error["error"] { text } else { "no message" }
                        switch WriteAnswer.parse(code: code, message: words) {
                        case .refused(let reason): decided[position] = .refused(reason)
                        case .gone: decided[position] = WriteAnswer.goneResult(for: change.operation)
                        case .accepted, .changedSince, .failed: preconditionFailure("a Parse error code is gone or a refusal")
                        }
                    }
                }
                fetchMany(Array(Set(written.values).union(taken.values))) { [self] records in
                    for (position, id) in written {
                        decided[position] = records[id].map { .accepted($0) } ?? .conflict(remote: nil)
                    }
                    for (position, id) in taken {
                        decided[position] = records[id].map { .conflict(remote: $0) } ?? .refused("Parse refused objectId \(id) as taken, and no object has it")
                    }
                    report(chunk, decided)
                }
            }
        }
    }

    /// The object an earlier send of `change` made, when the remote holds it: every field that
    /// send set to a value (not a number moved by a delta, which another writer's bump would
    /// look like) is the sent value. Nil when nothing was sent, or only increments were, or the
    /// remote holds something else.
    static func landedSend(of change: LocalChange, remote: [String: JSONValue]) -> [String: JSONValue]? {
        guard change.sent != nil, let sent = change.sentBody.flatMap(JSONValue.object(parsing:)) else { return nil }
        let base = change.baseBody.flatMap(JSONValue.object(parsing:)) ?? [:]
        let set = Set(base.keys).union(sent.keys).subtracting(ParseFieldMerge.builtIn).filter { key in
            base[key] != sent[key] && !(base[key]?.numeric != nil && sent[key]?.numeric != nil)
        }
        guard !set.isEmpty, set.allSatisfy({ remote[$0] == sent[$0] }) else { return nil }
        return sent
    }

    /// Whether an update's body holds an operation that counts again when sent again.
    static func increments(_ fields: [String: JSONValue]) -> Bool {
        fields.values.contains { value in
            if case .object(let members) = value { members["__op"] == .string("Increment") } else { false }
        }
    }

    static func batched(_ method: String, _ path: String, body: [String: JSONValue]?) -> JSONValue {
        var request: [String: JSONValue] = ["method": .string(method), "path": .string(path)]
        if let body { request["body"] = .object(body) }
        return .object(request)
    }

    /// Hands a batch's results over in the changes' order, then goes on.
    private func report(_ chunk: [LocalChange], _ decided: [Int: PushResult]) {
        walk.deliver(chunk.enumerated().map { ($0.element, decided[$0.offset]) }, advancing: chunk.count)
    }

    /// The objects with these ids as the remote holds them (absent ones are missing), in one
    /// query.
    private func fetchMany(_ ids: [String], then: @escaping ([String: RemoteRecord]) -> Void) {
        guard !ids.isEmpty else { return then([:]) }
        query(endpoint.objectsURL(ids)) { records in
            then(Dictionary(records.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first }))
        }
    }

    /// The object as the remote holds it now; nil when it has none.
    private func fetch(_ id: String, then: @escaping (RemoteRecord?) -> Void) {
        fetchMany([id]) { then($0[id]) }
    }

    /// The objects a class query answers, each body exactly as Parse renders it.
    private func query(_ url: String, then: @escaping ([RemoteRecord]) -> Void) {
        loader.load(endpoint.request("GET", url)) { [self] result in
            switch result {
            case .failure(let error): return walk.fail(SyncError(error, store: store))
            case .success(let page):
                guard (200..<300).contains(page.head.status) else { return walk.fail(statusError(page)) }
                guard let scanned = try? objectsScanner.scan(page.body) else {
                    return walk.fail(SyncError(.malformedResponse, store: store.name, url: page.url, message: "Parse answered a query with malformed JSON"))
                }
                then(scanned.records.enumerated().compactMap { position, object in
                    if case .record(let record) = object.outcome(in: page.body, maxBytes: .max, position: position) { record } else { nil }
                })
            }
        }
    }

    // MARK: - Operations

    private func pushCreate(_ change: LocalChange) {
        guard let body = change.body else { return undoCreate(change) }
        guard let local = JSONValue.object(parsing: body) else { return walk.finish(change, .refused("the local body is not a JSON object")) }
        let object = ParseFieldMerge.create(local: local)
        let adopt = { [self] (found: RemoteRecord, sent: String) in
            walk.finish(change, Self.adoption(of: found, sent: sent, row: object))
        }
        guard let sentAt = change.sent, let sent = change.baseBody else { return create(change, object: object, adopt: adopt) }
        findSent(change, sent: sent, at: sentAt) { [self] found in
            if let found { return adopt(found, sent) }
            // Not found yet: a send cut off by a crash may still be at work on the server. With
            // server ids creating again now could make a second object, so a later pass looks
            // again; with client ids a late landing only makes the new send a 137 (adopted).
            if change.sendMayStillLand(), !clientIDs { return walk.postpone(change) }
            create(change, object: object, adopt: adopt)
        }
    }

    /// What a create sent before a crash becomes once its object is found: accepted when the
    /// row still holds what was sent; otherwise an update of the object, queued on top. Based on
    /// the object as found when nobody wrote it since it was made (it holds exactly that send,
    /// so a delete of the row deletes it and an edit goes out plainly); based on what was sent,
    /// at no version, when someone did: the next round merges all three (sent, the row, the
    /// object now), so their change is kept or met as a conflict.
    static func adoption(of found: RemoteRecord, sent: String, row: [String: JSONValue]) -> PushResult {
        let unchanged = JSONValue.encode(row) == JSONValue.encode(JSONValue.object(parsing: sent) ?? [:])
        if unchanged { return .accepted(found) }
        return .acceptedEarlierSend(found, sent: untouchedSinceCreated(found) ? nil : sent)
    }

    /// `POST` of one create (named with the id the client chose, when it chooses), recorded as
    /// sent first. A 137 for a chosen id that an earlier send of this create may have taken
    /// (it was recorded as sent) is that send, landed late: adopted.
    private func create(_ change: LocalChange, object: [String: JSONValue], adopt: @escaping (RemoteRecord, String) -> Void) {
        let sentBody = String(decoding: JSONValue.encode(object), as: UTF8.self)
        let chosen = clientIDs ? Self.clientID(for: change) : nil
        switch walk.willSendCreate(change, body: sentBody, remoteID: chosen) {
        case .send: break
        case .skipped: return walk.finish(change, .accepted(nil))
        case .stopped: return
        }
        var named = object
        if let chosen { named["objectId"] = .string(chosen) }
        let request = endpoint.request("POST", endpoint.classURL, json: JSONValue.encode(named))
        loader.load(request) { [self] result in
            switch result {
            case .failure(let error): return walk.fail(SyncError(error, store: store))
            case .success(let page):
                if (200..<300).contains(page.head.status) {
                    guard let created = try? JSONDecoder().decode([String: JSONValue].self, from: page.body),
                          case .string(let id)? = created["objectId"] else {
                        return walk.fail(SyncError(.malformedResponse, store: store.name, url: page.url, message: "Parse answered a create without an objectId"))
                    }
                    return fetch(id) { [self] record in walk.finish(change, record.map { .accepted($0) } ?? .conflict(remote: nil)) }
                }
                let refused = Self.error(page)
                if let chosen, change.sent != nil, refused?.code == 137, let sent = change.baseBody {
                    return fetch(chosen) { [self] record in
                        guard let record else { return walk.finish(change, .conflict(remote: nil)) }
                        adopt(record, sent)
                    }
                }
                switch refused.map({ WriteAnswer.parse(code: $0.code, message: $0.message) }) {
                case .refused(let reason)?: walk.finish(change, .refused(reason))
                case .gone?: walk.finish(change, WriteAnswer.goneResult(for: change.operation))
                case nil: walk.fail(statusError(page))
                case .accepted?, .changedSince?, .failed?: preconditionFailure("a Parse error code is gone or a refusal")
                }
            }
        }
    }

    /// The object a create sent before made, if the server has it: by the id the create named
    /// it with (client ids), or by what was sent.
    private func findSent(_ change: LocalChange, sent: String, at date: Date, then: @escaping (RemoteRecord?) -> Void) {
        if clientIDs, let id = change.sentVersion { fetch(id, then: then) } else { lookUp(sent: sent, at: date, then: then) }
    }

    /// A create whose row was deleted here after it was sent: what the send made must go too.
    /// The object is found by the id the create named it with (client ids) or by what was sent.
    /// Untouched since it was made, it becomes a delete of that version; changed by someone
    /// else since, a delete based on what was sent, so the store's conflict policy meets that
    /// change rather than the delete erasing it. Not found while ``LocalChange/sendMayStillLand(now:)``,
    /// it waits: a send cut off by a crash may still land, and dropping the delete then would
    /// leave the object on the server.
    private func undoCreate(_ change: LocalChange) {
        guard let sent = change.baseBody, let sentAt = change.sent else { return walk.finish(change, .accepted(nil)) }
        let decide = { [self] (found: RemoteRecord?) in
            guard let found else {
                return change.sendMayStillLand() ? walk.postpone(change) : walk.finish(change, .accepted(nil))
            }
            walk.finish(change, .acceptedEarlierSend(found, sent: Self.untouchedSinceCreated(found) ? nil : sent))
        }
        findSent(change, sent: sent, at: sentAt, then: decide)
    }

    /// Whether nobody wrote the object after it was created: Parse stamps a create's
    /// `updatedAt` with its `createdAt`, and every later write moves `updatedAt` on.
    static func untouchedSinceCreated(_ record: RemoteRecord) -> Bool {
        guard case .object(let members)? = try? JSONDecoder().decode(JSONValue.self, from: record.body),
              case .string(let created)? = members["createdAt"] else { return false }
        return created == record.version
    }

    // MARK: - Requests

    /// A create that was sent without its answer recorded, found by what was sent: created no
    /// earlier than the send (less ``lookupSkew``) with every plain field equal. Exactly one
    /// match is adopted; none or several mean it is sent again.
    private func lookUp(sent: String, at date: Date, then: @escaping (RemoteRecord?) -> Void) {
        // Plain values of fields Parse can query: a name it would refuse in a where clause
        // fails the whole lookup, and with it the push.
        var condition = (JSONValue.object(parsing: sent) ?? [:]).filter {
            guard Self.isQueryableFieldName($0.key) else { return false }
            switch $0.value {
            case .string, .integer, .number, .bool: return true
            default: return false
            }
        }
        condition["createdAt"] = .object(["$gte": .object(["__type": .string("Date"), "iso": .string(InternetTimestamp.string(from: date.addingTimeInterval(-Self.lookupSkew)))])])
        let url = endpoint.classURL + "?where=" + URLQuery.encode(String(decoding: JSONValue.encode(condition), as: UTF8.self)) + "&limit=2"
        query(url) { found in then(found.count == 1 ? found[0] : nil) }
    }

    /// A field name Parse takes in a query: a letter, then letters, digits and `_`.
    static func isQueryableFieldName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, first.properties.isAlphabetic, first.isASCII else { return false }
        return name.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_") }
    }

    /// The Parse error of a write it refuses: a 400 with `{"code":N,"error":...}`.
    static func error(_ page: HTTPPageLoader.Page) -> (code: Int, message: String)? {
        guard page.head.status == 400,
              let object = try? JSONSerialization.jsonObject(with: page.body) as? [String: Any],
              let code = object["code"] as? Int else { return nil }
        return (code, object["error"] as? String ?? "no message")
    }

    private func statusError(_ page: HTTPPageLoader.Page) -> SyncError {
        page.statusError(target: .derivedURL, context: errorContext)
    }
}

extension ParseOptions {
    public func makeWriter(_ context: RemoteSourceContext) throws(SyncError) -> any RemoteWriter {
        ParseWriter(context, options: self)
    }
}
