import Foundation
import Logging
import Testing
@testable import FerryKit
import FerryTestSupport

/// Runs discovery for `store` on an operation of its own, as `ferry discover` does.
func discover(_ store: StoreConfiguration, contents: [WebDAVOptions.Content] = [.addressBook, .calendar]) -> Result<DAVAccount, SyncError> {
    let authentication = store.options.as(WebDAVOptions.self)?.authentication ?? .none
    let operation = DiscoveryOperation(store: store, authentication: authentication, contents: contents, logger: Logger(label: "test"))
    OperationQueue().addOperations([operation], waitUntilFinished: true)
    guard let result = operation.result else {
        Issue.record("discovery ended without a result")
        return operation.cancelledOutcome
    }
    return result
}

@Suite("Discovery against every DAV server", .enabled(if: DAVServer.shouldRun, "radicale/xandikos not installed: pip install radicale xandikos into $FERRY_VENV (bash scripts/test.sh does)"))
struct DAVDiscoveryServerTests {
    static func trimmed(_ url: String) -> String { url.hasSuffix("/") ? String(url.dropLast()) : url }

    func account(_ server: DAVServer, from url: String, password: String = DAVServer.password) throws -> DAVAccount {
        try discover(server.store(password: password, url: url)).get()
    }

    @Test(arguments: DAVServer.Kind.accountServers)
    func findsEveryCollectionFromTheServersRoot(_ kind: DAVServer.Kind) throws {
        let server = try DAVServer.shared(kind)
        let account = try account(server, from: server.accountURL)
        #expect(account.principalURL == server.baseURL + server.principalPath)
        #expect(!account.startedAtCollection)
        let books = account.collections.filter { $0.content == .addressBook }
        let calendars = account.collections.filter { $0.content == .calendar }
        #expect(books.map(\.url) == [server.addressBookURL])
        #expect(calendars.map(\.url) == [server.calendarURL])
        // sabre/dav 1.8 has no sync-collection, and says so in supported-report-set.
        #expect(books.first?.supportsSyncCollection == (kind != .sabredav))
        #expect(calendars.first?.supportsSyncCollection == (kind != .sabredav))
        #expect(calendars.first?.components.contains("VEVENT") == true)
        #expect(books.first?.displayName != nil)
        #expect(account.unusable.isEmpty)
    }

    @Test(arguments: DAVServer.Kind.accountServers)
    func theWellKnownURLAndThePrincipalLeadToTheSameCollections(_ kind: DAVServer.Kind) throws {
        let server = try DAVServer.shared(kind)
        let fromRoot = try account(server, from: kind == .sogo ? server.accountURL : server.baseURL)
        let fromPrincipal = try account(server, from: server.baseURL + server.principalPath)
        // sabre/dav 1.8 has no well-known URLs (404): from the root, discovery asks the root.
        // SOGo's answer its login page (its proxy would redirect them).
        if kind != .sabredav, kind != .sogo {
            let fromWellKnown = try account(server, from: server.baseURL + "/.well-known/carddav")
            #expect(fromWellKnown.collections.map(\.url) == fromRoot.collections.map(\.url))
        }
        #expect(fromPrincipal.collections.map(\.url) == fromRoot.collections.map(\.url))
        // SOGo names its principal without the trailing slash in current-user-principal.
        #expect(fromPrincipal.principalURL.map(Self.trimmed) == fromRoot.principalURL.map(Self.trimmed))
    }

    /// From a collection's URL, as from any start, the account's collections are all listed
    /// (through the `current-user-principal` the collection names), the start first; a
    /// `caldav` store there syncs that one.
    @Test(arguments: DAVServer.Kind.accountServers)
    func aCollectionURLLeadsToTheWholeAccountAndComesFirst(_ kind: DAVServer.Kind) throws {
        let server = try DAVServer.shared(kind)
        let account = try account(server, from: server.calendarURL)
        let fromRoot = try self.account(server, from: server.accountURL)
        #expect(account.startedAtCollection)
        #expect(account.collections.first?.url == server.calendarURL)
        #expect(account.collections.first?.content == .calendar)
        #expect(Set(account.collections.map(\.url)) == Set(fromRoot.collections.map(\.url)))
        #expect(account.principalURL.map(Self.trimmed) == fromRoot.principalURL.map(Self.trimmed))
        let report = DiscoveryReport(store: server.store(.caldav, url: server.calendarURL), result: .success(account))
        guard case .syncsCollection(let url) = report.verdict else {
            Issue.record("a calendar store at its calendar's URL: \(report.verdict)")
            return
        }
        #expect(url == server.calendarURL)
    }

    @Test(arguments: DAVServer.Kind.available)
    func aStoreAtTheServersRootIsToldWhichURLsItCouldName(_ kind: DAVServer.Kind) throws {
        let server = try DAVServer.shared(kind)
        let store = server.store(url: server.baseURL + "/")
        let report = DiscoveryReport(store: store, result: discover(store, contents: [.addressBook]))
        guard case .namesNoCollection(let candidates) = report.verdict else {
            Issue.record("a carddav store at the server's root: \(report.verdict)")
            return
        }
        #expect(candidates == [server.addressBookURL])
        #expect(!report.isUsable)
        #expect(report.lines.contains("    " + server.addressBookURL))
        // Every labelled line's value starts in one column (principal, homes and collections
        // started in three).
        let labels = ["answered at", "principal", "address book home", "calendar home", "address book", "calendar", "unusable"]
        let columns = Set(report.lines.compactMap { line -> Int? in
            guard let label = labels.first(where: { line.hasPrefix("  " + $0 + " ") }) else { return nil }
            let rest = line.dropFirst(2 + label.count)
            return 2 + label.count + rest.prefix { $0 == " " }.count
        })
        #expect(columns.count == 1, "\(report.lines)")
    }

    @Test func aWrongPasswordIsACredentialsErrorNamingTheStep() throws {
        let server = try DAVServer.shared(.radicale)
        let result = discover(server.store(password: "not-the-password", url: server.baseURL + "/"))
        guard case .failure(let error) = result else {
            Issue.record("discovery with a wrong password succeeded")
            return
        }
        #expect(error.kind == SyncError.Kind.unauthorized)
        #expect(error.position == DiscoveryStep.wellKnown.description)
        #expect(!error.description.contains("not-the-password"))
    }
}

/// What real servers will not do on demand, from `Tests/Servers/discovery_faults.py`.
@Suite("Discovery against broken servers")
struct DAVDiscoveryFaultTests {
    func run(_ scenario: String, collections: Int? = nil, path: String = "/") throws -> (Result<DAVAccount, SyncError>, String) {
        var arguments = ["--scenario", scenario]
        if let collections { arguments += ["--collections", "\(collections)"] }
        let server = try TestServer.python("discovery_faults.py", arguments: arguments)
        defer { server.stop() }
        var options = WebDAVOptions(content: .addressBook)
        options.authentication = .basic(username: "ferry", password: Secret("secret", source: "test"))
        let store = StoreConfiguration(name: "account", url: server.baseURL + path, options: options,
                                       location: ConfigurationLocation(file: "test.conf", line: 1))
        return (discover(store), server.baseURL)
    }

    func failure(_ result: Result<DAVAccount, SyncError>) -> SyncError? {
        if case .failure(let error) = result { return error }
        Issue.record("discovery succeeded: \(result)")
        return nil
    }

    @Test func aWellKnownURLThatRedirectsToItselfFailsAtThatStep() throws {
        let (result, base) = try run("loop")
        guard let error = failure(result) else { return }
        #expect(error.kind == .transport(.tooManyRedirects))
        #expect(error.position == DiscoveryStep.wellKnown.description)
        #expect(error.url.hasPrefix(base + "/.well-known/carddav"))
    }

    @Test func anHTMLLoginPageAnsweredWith200IsNotTakenForAnAccount() throws {
        let (result, _) = try run("html")
        guard let error = failure(result) else { return }
        #expect(error.kind == .malformedResponse)
        #expect(error.message.contains("HTML page"))
        // A well-known URL answered with a page is taken for one the server lacks (SOGo without
        // its proxy's redirect): the start URL is asked, and its page is the error.
        #expect(error.position == DiscoveryStep.context.description)
    }

    @Test func aPrincipalWithoutHomeSetsIsAnErrorNamingThePrincipal() throws {
        let (result, base) = try run("no-home")
        guard let error = failure(result) else { return }
        #expect(error.kind == .configuration)
        #expect(error.url == base + "/principals/ferry/")
        #expect(error.position == DiscoveryStep.principal.description)
        #expect(error.message.contains("addressbook-home-set"))
    }

    @Test func aServerWithoutCurrentUserPrincipalIsAnErrorNamingTheURL() throws {
        let (result, base) = try run("no-principal")
        guard let error = failure(result) else { return }
        #expect(error.kind == .configuration)
        #expect(error.url == base + "/")
        #expect(error.position == DiscoveryStep.context.description)
    }

    @Test func aHomeSetOfThousandsOfCollectionsIsListedWhole() throws {
        let (result, base) = try run("many", collections: 1_500)
        let account = try result.get()
        #expect(account.collections.count == 3_000)
        #expect(account.collections.first?.url == base + "/home/ferry/book-0/")
        #expect(account.collections.filter { $0.content == .calendar }.count == 1_500)
        #expect(account.collections.last?.displayName == "Calendar 1499")
    }

    @Test func aCollectionThatIsBothAnAddressBookAndACalendarIsSetAside() throws {
        let (result, base) = try run("both")
        let account = try result.get()
        #expect(account.collections.map(\.url) == [base + "/home/ferry/book/", base + "/home/ferry/cal/"])
        #expect(account.unusable.map(\.url) == [base + "/home/ferry/both/"])
        #expect(account.unusable.first?.reason.contains("both an address book and a calendar") == true)
    }
}

@Suite struct DiscoveryAnswerTests {
    /// The table in ``DiscoveryAnswer``'s documentation, row by row.
    @Test func statusAndContentTypeDecideWhatAnAnswerIs() {
        #expect(DiscoveryAnswer.judge(status: 207, contentType: "application/xml; charset=utf-8", step: .context) == .multistatus)
        #expect(DiscoveryAnswer.judge(status: 207, contentType: "text/xml", step: .homeSet) == .multistatus)
        #expect(DiscoveryAnswer.judge(status: 207, contentType: nil, step: .principal) == .multistatus)
        #expect(DiscoveryAnswer.judge(status: 200, contentType: "text/html", step: .context) == .notWebDAV("an HTML page"))
        #expect(DiscoveryAnswer.judge(status: 200, contentType: "text/html; charset=utf-8", step: .wellKnown) == .absent)
        #expect(DiscoveryAnswer.judge(status: 200, contentType: "application/json", step: .context) == .notWebDAV("application/json"))
        for status in [400, 403, 404, 405, 410, 501] {
            #expect(DiscoveryAnswer.judge(status: status, contentType: "text/plain", step: .wellKnown) == .absent)
            #expect(DiscoveryAnswer.judge(status: status, contentType: "text/plain", step: .context) == .refused)
        }
        #expect(DiscoveryAnswer.judge(status: 401, contentType: "text/plain", step: .wellKnown) == .refused)
        #expect(DiscoveryAnswer.judge(status: 500, contentType: "text/plain", step: .wellKnown) == .refused)
    }

    @Test func onlyAServersRootGoesThroughTheWellKnownURL() {
        #expect(DAVDiscovery.isServerRoot("https://dav.example.com"))
        #expect(DAVDiscovery.isServerRoot("https://dav.example.com/"))
        #expect(!DAVDiscovery.isServerRoot("https://dav.example.com/dav/"))
        #expect(DAVDiscovery.wellKnownURL("https://dav.example.com:8443/?x=1", content: .calendar) == "https://dav.example.com:8443/.well-known/caldav")
    }

    @Test func hrefsResolveAgainstTheURLThatAnswered() {
        #expect(DAVDiscovery.resolve("/dav/ferry/", against: "http://h:1/.well-known/carddav") == "http://h:1/dav/ferry/")
        #expect(DAVDiscovery.resolve("books/", against: "http://h:1/dav/ferry/") == "http://h:1/dav/ferry/books/")
        #expect(DAVDiscovery.resolve("https://other/x/", against: "http://h:1/") == "https://other/x/")
        #expect(DAVDiscovery.samePath("http://h:1/a%20b/", "http://h:1/a b"))
        #expect(DAVDiscovery.lastSegment("http://h/dav/Fam%C3%ADlia/") == "Família")
    }
}

/// `ferry discover` exits 78 for a `dav-account` store that would sync nothing, as its
/// `--help` says, not 0.
@Suite("A dav-account store that syncs nothing")
struct EmptyAccountTests {
    @Test func anAccountStoreWithNoCollectionToSyncIsAConfigurationProblem() throws {
        let directory = try TemporaryDirectory()
        try "secret".write(toFile: directory.path("password"), atomically: true, encoding: .utf8)
        chmod(directory.path("password"), 0o600)
        let store = try configuredStore(name: "work", kind: "dav-account", url: "https://dav.example/",
                                        ["username": "u", "password": "file:" + directory.path("password")])
        let report = DiscoveryReport(store: store, result: .success(DAVAccount(startURL: "https://dav.example/", contextURL: "https://dav.example/")))
        #expect(!report.isUsable)
        #expect(report.exitCode == .configuration)
    }
}
