import Foundation
import Logging

/// Finds an account's address books and calendars from a URL people know: the server's root
/// (through `/.well-known/carddav` and `/.well-known/caldav`, RFC 6764), the principal, a home
/// set, or a collection itself.
///
/// For each content asked for, in order:
/// 1. **Context.** A start URL without a path goes to the well-known URL first (redirects
///    followed); a well-known URL the server does not have (404, 405, 501...) falls back to
///    the start URL. PROPFIND Depth 0 asks it for `current-user-principal`, the home sets and
///    the resource type. A collection there is listed first; the account's other collections
///    follow through the `current-user-principal` it names (without one, it is the only one).
/// 2. **Principal.** PROPFIND Depth 0 of the principal for `addressbook-home-set` and
///    `calendar-home-set`, once per principal, and its scheduling inbox and outbox, which
///    are left out of the listing.
/// 3. **Home sets.** PROPFIND Depth 1 of each home set, once per URL, for every member's
///    resource type, display name, colour, components and supported reports.
///
/// Nothing is written anywhere: the result is what ``DAVAccount`` holds, or a ``SyncError``
/// naming the URL and the step that failed (a loop of redirects, an HTML login page answered
/// with 200, a principal without home sets).
///
/// Like a source, it runs on the run loop of the thread that created it, one request at a
/// time (discovery makes a handful).
public final class DAVDiscovery: RemoteSessionDelegate {
    private enum State {
        case idle
        case requesting(Request)
        case finished
    }

    /// The request in flight and what comes of its answer.
    private struct Request {
        var taskIdentifier: Int
        var step: DiscoveryStep
        var url: String
        var head: ResponseHead?
        var body = Data()
        var continuation: (Answer) -> Void
    }

    /// A PROPFIND's answer: the resources, or (for the well-known URL only) that the server has
    /// no such URL.
    private enum Answer {
        case resources([DAVResource], url: String)
        case absent
    }

    public let store: StoreConfiguration
    private let contents: [WebDAVOptions.Content]
    private let logger: Logger?
    private var commonHeaders = HTTPHeaders()
    private let errorContext: HTTPStatusClassifier.Context
    private var session: RemoteSession!
    private var state = State.idle
    private var completion: ((Result<DAVAccount, SyncError>) -> Void)?
    private var outcome: Result<DAVAccount, SyncError>?
    private var account: DAVAccount
    private var remaining: [WebDAVOptions.Content]
    /// Principals already asked for their home sets, and home sets already listed.
    private var principals: [String: DAVResource] = [:]
    private var listedHomes: Set<String> = []
    private var listedCollections: Set<String> = []
    /// The scheduling inbox and outbox the principal names (RFC 6638 §2.2): calendars in
    /// their home set's listing, but mailboxes for invitations, not calendars to sync (DAViCal
    /// lists its `.in/` and `.out/` as plain calendars).
    private var schedulingCollections: Set<String> = []
    /// Contents whose home set the account lacks.
    private var homeless: [WebDAVOptions.Content] = []
    public private(set) var requests = 0

    /// Largest PROPFIND answer read: a home set of thousands of collections fits many times.
    static let maxAnswerBytes = 16 << 20

    /// Discovery for `store` (its URL, credentials, headers, query and transport settings),
    /// looking for `contents`. Call on the thread whose run loop delivers the answers.
    public init(store: StoreConfiguration, authentication: HTTPAuthentication, contents: [WebDAVOptions.Content], logger: Logger? = nil) {
        self.store = store
        self.contents = contents
        self.logger = logger
        remaining = contents
        account = DAVAccount(startURL: store.url.redactingUserInfo, contextURL: store.url.redactingUserInfo)
        if let authorization = authentication.authorization { commonHeaders.set("Authorization", authorization) }
        store.headers.apply(to: &commonHeaders)
        errorContext = HTTPStatusClassifier.Context(store)
        session = RemoteSession(configuration: store.session, delegate: self)
    }

    /// Starts discovery; `completion` runs once on this thread's run loop, never inside `start`.
    public func start(completion: @escaping (Result<DAVAccount, SyncError>) -> Void) {
        guard case .idle = state else { preconditionFailure("DAVDiscovery started twice") }
        self.completion = completion
        nextContent()
    }

    /// Stops the request in flight; the completion is not called.
    public func cancel() {
        if case .requesting = state { session.cancelAll() }
        state = .finished
        completion = nil
    }

    // MARK: - Steps

    private func nextContent() {
        guard !remaining.isEmpty else { return finish() }
        let content = remaining.removeFirst()
        guard Self.isServerRoot(store.url), let wellKnown = Self.wellKnownURL(store.url, content: content) else {
            return askContext(store.url, content: content)
        }
        propfind(wellKnown, depth: "0", properties: Self.contextProperties, step: .wellKnown) { [unowned self] answer in
            switch answer {
            case .resources(let resources, let url): context(resources, url: url, content: content)
            case .absent: askContext(store.url, content: content)
            }
        }
    }

    private func askContext(_ url: String, content: WebDAVOptions.Content) {
        propfind(url, depth: "0", properties: Self.contextProperties, step: .context) { [unowned self] answer in
            guard case .resources(let resources, let answered) = answer else { preconditionFailure("only the well-known URL may be absent") }
            context(resources, url: answered, content: content)
        }
    }

    /// The start URL's (or the well-known URL's) answer: a collection, a principal, or a
    /// pointer to one.
    private func context(_ resources: [DAVResource], url: String, content: WebDAVOptions.Content) {
        let resource = own(resources, at: url)
        if account.contextURL == account.startURL { account.contextURL = url }
        if let resource { noteScheduling(resource, answeredAt: url) }
        let types = resource?.resourceTypes ?? []
        let principal = resource?[DAVName.dav + "current-user-principal"]?.hrefs.first.flatMap { Self.resolve($0, against: url) }
            ?? (types.contains(DAVName.principal) ? url : nil)
        if types.contains(DAVName.addressBook) || types.contains(DAVName.calendar) {
            // The collection comes first (a carddav or caldav store syncs it); the rest of the
            // account is listed through the principal it names, as from any other start.
            account.startedAtCollection = true
            if let resource { take(resource, answeredAt: url, home: nil) }
            guard principal != nil else { return finish() }
        }
        if let principal { account.principalURL = account.principalURL ?? principal }
        let homes = (resource?[Self.homeSet(content)]?.hrefs ?? []).compactMap { Self.resolve($0, against: url) }
        if !homes.isEmpty { return list(homes, content: content) }
        guard let principal else {
            return fail(.context, url: url, "the server named no current-user-principal here: is this a CardDAV/CalDAV server's URL, and are username and password set?")
        }
        if let known = principals[principal] { return homesOf(known, principal: principal, content: content) }
        propfind(principal, depth: "0", properties: Self.principalProperties, step: .principal) { [unowned self] answer in
            guard case .resources(let resources, let answered) = answer else { preconditionFailure("only the well-known URL may be absent") }
            let resource = own(resources, at: answered) ?? DAVResource()
            noteScheduling(resource, answeredAt: answered)
            principals[principal] = resource
            homesOf(resource, principal: answered, content: content)
        }
    }

    private func homesOf(_ principal: DAVResource, principal url: String, content: WebDAVOptions.Content) {
        let homes = (principal[Self.homeSet(content)]?.hrefs ?? []).compactMap { Self.resolve($0, against: url) }
        if homes.isEmpty {
            homeless.append(content)
            logger?.info("discovery: principal \(url) has no \(Self.homeSetName(content))", metadata: ["store": "\(store.name)"])
            return nextContent()
        }
        list(homes, content: content)
    }

    /// Lists each home set not listed yet, then goes on with the next content.
    private func list(_ homes: [String], content: WebDAVOptions.Content) {
        switch content {
        case .addressBook: account.addressBookHomes += homes.filter { !account.addressBookHomes.contains($0) }
        case .calendar: account.calendarHomes += homes.filter { !account.calendarHomes.contains($0) }
        }
        guard let home = homes.first(where: { !listedHomes.contains($0) }) else { return nextContent() }
        listedHomes.insert(home)
        propfind(home, depth: "1", properties: Self.collectionProperties, step: .homeSet) { [unowned self] answer in
            guard case .resources(let resources, let answered) = answer else { preconditionFailure("only the well-known URL may be absent") }
            for resource in resources { take(resource, answeredAt: answered, home: answered) }
            list(homes, content: content)
        }
    }

    private func noteScheduling(_ resource: DAVResource, answeredAt url: String) {
        for name in ["schedule-inbox-URL", "schedule-outbox-URL"] {
            for href in resource[DAVName.calDAV + name]?.hrefs ?? [] {
                if let resolved = Self.resolve(href, against: url) { schedulingCollections.insert(resolved.hasSuffix("/") ? resolved : resolved + "/") }
            }
        }
    }

    /// Adds a listed member when it is an address book or a calendar.
    private func take(_ resource: DAVResource, answeredAt url: String, home: String?) {
        guard let resolved = Self.resolve(resource.href, against: url) else { return }
        let collectionURL = resolved.hasSuffix("/") ? resolved : resolved + "/"
        // The home set itself, answered in its own listing.
        if let home, Self.samePath(collectionURL, home) { return }
        guard !listedCollections.contains(collectionURL) else { return }
        let types = resource.resourceTypes
        let isAddressBook = types.contains(DAVName.addressBook)
        let isCalendar = types.contains(DAVName.calendar)
        if Self.isMailbox(types: types, namedByPrincipal: schedulingCollections.contains(where: { Self.samePath($0, collectionURL) })) { return }
        if isAddressBook && isCalendar {
            listedCollections.insert(collectionURL)
            account.unusable.append(UnusableCollection(url: collectionURL, reason: "it says it is both an address book and a calendar; Ferry cannot tell which of the two its members are"))
            return
        }
        guard isAddressBook || isCalendar else { return }
        listedCollections.insert(collectionURL)
        var collection = DiscoveredCollection(url: collectionURL, segment: Self.lastSegment(collectionURL), content: isAddressBook ? .addressBook : .calendar)
        let name = resource[DAVName.dav + "displayname"]?.text ?? ""
        collection.displayName = name.isEmpty ? nil : name
        let color = resource[DAVName.appleICal + "calendar-color"]?.text ?? ""
        collection.color = color.isEmpty ? nil : color
        collection.components = resource[DAVName.calDAV + "supported-calendar-component-set"]?.componentNames ?? []
        if let reports = resource[DAVName.dav + "supported-report-set"] {
            collection.supportsSyncCollection = reports.elements.contains(DAVName.dav + "sync-collection")
        }
        let token = resource[DAVName.dav + "sync-token"]?.text ?? ""
        collection.syncToken = token.isEmpty ? nil : token
        account.collections.append(collection)
    }

    /// Whether a listed collection is a scheduling mailbox (RFC 6638), not a calendar to sync:
    /// typed `schedule-inbox`, typed `schedule-outbox` without also being typed a calendar, or
    /// named by the principal's `schedule-inbox-URL`/`schedule-outbox-URL` while typed a plain
    /// calendar (DAViCal's `.in/` and `.out/`). A collection typed both `calendar` and
    /// `schedule-outbox` is a calendar that also serves as the outbox (SOGo's `personal`), and
    /// is synced.
    static func isMailbox(types: Set<String>, namedByPrincipal: Bool) -> Bool {
        if types.contains(DAVName.calDAV + "schedule-inbox") { return true }
        let declaresOutbox = types.contains(DAVName.calDAV + "schedule-outbox")
        if declaresOutbox { return !types.contains(DAVName.calendar) }
        return namedByPrincipal
    }

    private func finish() {
        if !account.startedAtCollection, account.collections.isEmpty, account.unusable.isEmpty,
           homeless.count == contents.count, let principal = account.principalURL {
            let wanted = contents.map(Self.homeSetName).joined(separator: " or ")
            return fail(.principal, url: principal, "the principal has no \(wanted): the account has no \(contents.count == 1 && contents[0] == .addressBook ? "address books" : contents.count == 1 ? "calendars" : "address books or calendars") on this server")
        }
        end(.success(account))
    }

    private func fail(_ step: DiscoveryStep, url: String, _ message: String, kind: SyncError.Kind = .configuration) {
        fail(SyncError(kind, store: store.name, url: url, position: step.description, message: message))
    }

    private func fail(_ error: SyncError) {
        end(.failure(error.redacting(store.secrets)))
    }

    /// Calls the completion once, on a later turn of the loop: never inside start(), where the
    /// first step may end without a request.
    private func end(_ outcome: Result<DAVAccount, SyncError>) {
        guard completion != nil else { return }
        if case .requesting = state { session.cancelAll() }
        state = .finished
        self.outcome = outcome
        let box = UncheckedSendableBox(self)
        RunLoopHandle.current().perform { box.value.deliverOutcome() }
    }

    private func deliverOutcome() {
        guard let completion, let outcome else { return }
        self.completion = nil
        completion(outcome)
    }

    // MARK: - Requests

    private func propfind(_ url: String, depth: String, properties: String, step: DiscoveryStep, then continuation: @escaping (Answer) -> Void) {
        var headers = commonHeaders
        headers.set("Content-Type", "application/xml; charset=utf-8")
        headers.set("Depth", depth)
        let body = #"<?xml version="1.0" encoding="utf-8"?><D:propfind xmlns:D="DAV:" xmlns:C="\#(DAVName.calDAV)" xmlns:A="\#(DAVName.cardDAV)" xmlns:I="\#(DAVName.appleICal)"><D:prop>\#(properties)</D:prop></D:propfind>"#
        let request = HTTPRequest(method: "PROPFIND", url: store.query.apply(to: url), headers: headers, body: Data(body.utf8))
        do {
            let task = try session.start(request)
            requests += 1
            state = .requesting(Request(taskIdentifier: task.identifier, step: step, url: url, continuation: continuation))
        } catch {
            fail(SyncError(.transport(error.kind), store: store.name, url: url, position: step.description, message: "request not started: \(error.detail)"))
        }
    }

    public func session(_ session: RemoteSession, task: TransferTask, didReceive head: ResponseHead) {
        guard case .requesting(var request) = state, request.taskIdentifier == task.identifier else { return }
        request.head = head
        state = .requesting(request)
    }

    public func session(_ session: RemoteSession, task: TransferTask, didReceive data: Data) {
        guard case .requesting(var request) = state, request.taskIdentifier == task.identifier else { return }
        guard request.body.count + data.count <= Self.maxAnswerBytes else {
            return fail(SyncError(.malformedResponse, store: store.name, url: request.head?.url ?? request.url, position: request.step.description,
                                  message: "the PROPFIND answer is larger than \(Self.maxAnswerBytes >> 20) MiB"))
        }
        // Moved out of the state while appending, so the buffer is not copied.
        state = .idle
        request.body.append(data)
        state = .requesting(request)
    }

    public func session(_ session: RemoteSession, task: TransferTask, didCompleteWith metrics: TransferMetrics) {
        guard case .requesting(let request) = state, request.taskIdentifier == task.identifier, let head = request.head ?? task.head else { return }
        state = .idle
        switch DiscoveryAnswer.judge(status: head.status, contentType: head.headers["Content-Type"], step: request.step) {
        case .absent:
            logger?.debug("discovery: no \(request.url) (HTTP \(head.status)), asking the start URL", metadata: ["store": "\(store.name)"])
            request.continuation(.absent)
        case .refused:
            fail(HTTPStatusClassifier.error(head, body: request.body, target: .configuredURL, position: request.step.description, context: errorContext))
        case .notWebDAV(let what):
            fail(SyncError(.malformedResponse, store: store.name, url: head.url, position: request.step.description,
                           message: "the server answered HTTP \(head.status) with \(what), not a WebDAV multistatus: a login page, or not a CardDAV/CalDAV URL?"))
        case .multistatus:
            do {
                let resources = try DAVPropertiesParser().parse(request.body)
                request.continuation(.resources(resources, url: head.url))
            } catch {
                fail(SyncError(.malformedResponse, store: store.name, url: head.url, position: "\(request.step), line \(error.line) column \(error.column)",
                               message: "invalid WebDAV XML: \(error.message)"))
            }
        }
    }

    public func session(_ session: RemoteSession, task: TransferTask, didFailWith error: TransferError) {
        guard case .requesting(let request) = state, request.taskIdentifier == task.identifier else { return }
        state = .idle
        fail(SyncError(error, store: store, position: request.step.description))
    }

    // MARK: - Helpers

    /// The response about `url` itself in a Depth 0 answer (servers answer with its path, or a
    /// path it redirected to); the only one when just one came.
    private func own(_ resources: [DAVResource], at url: String) -> DAVResource? {
        resources.first { Self.resolve($0.href, against: url).map { Self.samePath($0, url) } ?? false } ?? (resources.count == 1 ? resources[0] : nil)
    }

    /// A start URL may be a collection: its own properties come with the first answer (not its
    /// sync-token: DAViCal fails a PROPFIND of its root asking for one with a 500).
    private static let contextProperties = "<D:current-user-principal/><A:addressbook-home-set/><C:calendar-home-set/>"
        + "<C:schedule-inbox-URL/><C:schedule-outbox-URL/>" + describingProperties
    private static let principalProperties = "<D:resourcetype/><A:addressbook-home-set/><C:calendar-home-set/><C:schedule-inbox-URL/><C:schedule-outbox-URL/>"
    private static let describingProperties = "<D:resourcetype/><D:displayname/><I:calendar-color/><C:supported-calendar-component-set/><D:supported-report-set/>"
    /// A home set's members: what they are, and each one's sync-token (a collection whose token
    /// is the stored cursor need not be asked again).
    private static let collectionProperties = describingProperties + "<D:sync-token/>"

    static func homeSet(_ content: WebDAVOptions.Content) -> String {
        content == .addressBook ? DAVName.cardDAV + "addressbook-home-set" : DAVName.calDAV + "calendar-home-set"
    }

    static func homeSetName(_ content: WebDAVOptions.Content) -> String {
        content == .addressBook ? "addressbook-home-set" : "calendar-home-set"
    }

    /// Whether `url` names a server rather than a resource on it (no path, or `/`).
    static func isServerRoot(_ url: String) -> Bool {
        guard let components = URLComponents(string: url) else { return false }
        return components.percentEncodedPath.isEmpty || components.percentEncodedPath == "/"
    }

    /// `scheme://host[:port]/.well-known/carddav` (or `caldav`).
    static func wellKnownURL(_ url: String, content: WebDAVOptions.Content) -> String? {
        guard var components = URLComponents(string: url) else { return nil }
        components.percentEncodedPath = content == .addressBook ? "/.well-known/carddav" : "/.well-known/caldav"
        components.percentEncodedQuery = nil
        components.fragment = nil
        return components.string
    }

    /// An href (a path, or absolute) as an absolute URL on the server that answered at `base`.
    static func resolve(_ href: String, against base: String) -> String? {
        guard !href.isEmpty, let baseURL = URL(string: base), let resolved = URL(string: href, relativeTo: baseURL) else { return nil }
        return resolved.absoluteURL.absoluteString
    }

    /// Whether two URLs name one resource, trailing slash and percent-encoding aside.
    static func samePath(_ a: String, _ b: String) -> Bool {
        func normalized(_ url: String) -> String {
            guard let components = URLComponents(string: url) else { return url }
            var path = components.percentEncodedPath.removingPercentEncoding ?? components.percentEncodedPath
            if path.hasSuffix("/") { path.removeLast() }
            return (components.host ?? "").lowercased() + ":" + String(components.port ?? 0) + path
        }
        return normalized(a) == normalized(b)
    }

    /// The last segment of a collection URL's path, decoded.
    static func lastSegment(_ url: String) -> String {
        let path = URLComponents(string: url)?.percentEncodedPath ?? url
        let segment = path.split(separator: "/").last.map(String.init) ?? ""
        return segment.removingPercentEncoding ?? segment
    }
}

/// What a discovery PROPFIND's status and content type mean: a pure decision, read as a table.
///
/// | status          | content type | step            | meaning     |
/// |-----------------|--------------|-----------------|-------------|
/// | 207, other 2xx  | XML or none  | any             | multistatus |
/// | 2xx             | HTML         | well-known      | absent (a web application's page where a proxy would redirect: SOGo) |
/// | 2xx             | HTML, other  | any other       | notWebDAV   |
/// | 400, 403, 404, 405, 410, 501 | any | well-known | absent   |
/// | anything else   | any          | any             | refused     |
enum DiscoveryAnswer: Equatable {
    case multistatus
    case absent
    case refused
    case notWebDAV(String)

    static func judge(status: Int, contentType: String?, step: DiscoveryStep) -> DiscoveryAnswer {
        if (200..<300).contains(status) {
            let type = (contentType ?? "").lowercased()
            if type.isEmpty || type.contains("xml") { return .multistatus }
            if step == .wellKnown, type.contains("html") { return .absent }
            return .notWebDAV(type.contains("html") ? "an HTML page" : "\(type.split(separator: ";").first.map(String.init) ?? type)")
        }
        if step == .wellKnown, [400, 403, 404, 405, 410, 501].contains(status) { return .absent }
        return .refused
    }
}
