import Foundation
import Synchronization
import Testing
@testable import FerryKit
import FerryTestSupport

/// A real CardDAV/CalDAV server on 127.0.0.1, started by `Tests/Servers/dav_servers.py`
/// with generated cards (`card-i.vcf`) and events (`event-j.ics`).
///
/// Radicale runs with htpasswd auth (`ferry` / `secret`); Xandikos has no auth and ignores the
/// Authorization header; DAViCal and sabre/dav 1.8 take HTTP Basic for `ferry` / `secret`.
/// Radicale and Xandikos come from `$FERRY_VENV/bin` or PATH (`pip install radicale xandikos`),
/// DAViCal and sabre/dav from Debian (`apt-get install davical postgresql php-sabre-dav php-sqlite3`).
/// The collections' and the principal's paths are the ones the script prints.
/// How the four differ for a sync client: `Tests/Servers/DAV-SERVERS.md`.
final class DAVServer: @unchecked Sendable {
    enum Kind: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case radicale, xandikos, davical, sabredav, sogo
        var testDescription: String { rawValue }

        /// The servers with sync-collection installed here (all three in CI, where a missing
        /// one fails): what the suites parametrised over `Kind.allCases` run against.
        static var allCases: [Kind] { syncCollectionServers.filter(\.shouldRun) }
        /// Every server, including the Debian-packaged ones.
        static let everyServer: [Kind] = [.radicale, .xandikos, .davical, .sabredav]
        /// Every server installed here (every one in CI, where a missing one fails).
        static var available: [Kind] { everyServer.filter(\.shouldRun) }
        /// The servers the discovery, account and calendar-filter suites run against: every
        /// one, and SOGo (a groupware server whose stock account has an address book and a
        /// calendar both named `personal`, and whose calendar is also the scheduling outbox).
        static var accountServers: [Kind] { (everyServer + [.sogo]).filter(\.shouldRun) }
        /// The servers with RFC 6578 sync-collection (sabre/dav 1.8 has none: Ferry's PROPFIND
        /// fallback path).
        static let syncCollectionServers: [Kind] = [.radicale, .xandikos, .davical]

        /// Whether this server is installed (pip's in `$FERRY_VENV/bin` or PATH, apt's files).
        var isInstalled: Bool {
            switch self {
            case .radicale, .xandikos:
                return TestTools.executable(rawValue) != nil
            case .davical:
                return FileManager.default.fileExists(atPath: "/usr/share/davical/htdocs/caldav.php")
                    && FileManager.default.fileExists(atPath: "/usr/lib/postgresql/15/bin/postgres")
                    && Shell.succeeds(["php", "-r", "exit(extension_loaded('pdo_pgsql') ? 0 : 1);"])
            case .sabredav:
                return FileManager.default.fileExists(atPath: "/usr/share/php/Sabre/autoload.php")
                    && Shell.succeeds(["php", "-r", "exit(extension_loaded('pdo_sqlite') ? 0 : 1);"])
            case .sogo:
                return FileManager.default.fileExists(atPath: "/usr/sbin/sogod") && FileManager.default.fileExists(atPath: "/usr/bin/memcached")
                    && FileManager.default.fileExists(atPath: "/usr/lib/postgresql/15/bin/postgres")
            }
        }

        /// Run this server's tests when it is installed, and always in CI (where a missing
        /// server must fail, not skip).
        var shouldRun: Bool { isInstalled || isCI }
    }

    /// What the test proxy does to addressbook-query / calendar-query answers.
    enum QueryFault: Sendable {
        case refuse
        /// 403 with `DAV:supported-report` (RFC 3253 §3.6), as servers refuse a report they lack.
        case refuseAsUnsupported
        /// Only the first `keep` members, nothing saying the answer is partial.
        case subset(keep: Int)
        /// Only the first `keep` members, and a 507 response saying so.
        case truncate(keep: Int)
    }

    static let username = "ferry"
    static let password = "secret"

    let kind: Kind
    let cards: Int
    let events: Int
    private let server: TestServer

    var baseURL: String { server.baseURL }
    /// From the script's `ADDRESSBOOK`, `CALENDAR` and `PRINCIPAL` lines.
    let addressBookPath: String
    let calendarPath: String
    let principalPath: String
    var addressBookURL: String { baseURL + addressBookPath }
    /// Where discovery of the whole account starts: the server's root, or for SOGo (whose
    /// root and well-known URLs answer its web application's login page without the proxy
    /// that would redirect them) its DAV root.
    var accountURL: String { baseURL + (kind == .sogo ? "/SOGo/dav/" : "/") }
    var calendarURL: String { baseURL + calendarPath }

    /// - Parameters:
    ///   - withoutSyncCollection: a proxy in front refuses sync-collection (501).
    ///   - truncateSync: a proxy in front answers sync-collection with at most this many
    ///     members, marked partial the RFC 6578 way, with a continuation token.
    ///   - queryFault: a proxy in front refuses collection queries (501), or cuts their
    ///     answers to `keep` members, silently or marked partial.
    init(_ kind: Kind, cards: Int, events: Int = 5, withoutSyncCollection: Bool = false, truncateSync: Int? = nil, queryFault: QueryFault? = nil) throws {
        self.kind = kind
        self.cards = cards
        self.events = events
        var arguments = [
            TestServer.repositoryRoot.appendingPathComponent("Tests/Servers/dav_servers.py").path,
            "--server", kind.rawValue, "--cards", "\(cards)", "--events", "\(events)",
        ]
        if kind != .xandikos { arguments += ["--auth", "\(Self.username):\(Self.password)"] }
        if withoutSyncCollection { arguments.append("--no-sync-collection") }
        if let truncateSync { arguments += ["--truncate-sync", "\(truncateSync)"] }
        switch queryFault {
        case nil: break
        case .refuse: arguments += ["--query", "refuse"]
        case .refuseAsUnsupported: arguments += ["--query", "refuse-unsupported"]
        case .subset(let keep): arguments += ["--query", "subset", "--query-keep", "\(keep)"]
        case .truncate(let keep): arguments += ["--query", "truncate", "--query-keep", "\(keep)"]
        }
        let server = try TestServer(executable: "/usr/bin/env", arguments: ["python3"] + arguments)
        func printed(_ key: String) throws -> String {
            guard let line = server.outputLines.first(where: { $0.hasPrefix(key + " ") }) else {
                server.stop()
                throw TestServerError.didNotStart("dav_servers.py --server \(kind.rawValue) printed no \(key) line")
            }
            return String(line.dropFirst(key.count + 1)).trimmingCharacters(in: .whitespaces)
        }
        addressBookPath = try printed("ADDRESSBOOK")
        calendarPath = try printed("CALENDAR")
        principalPath = try printed("PRINCIPAL")
        self.server = server
    }

    func stop() { server.stop() }

    /// Whether both servers are installed (`$FERRY_VENV/bin` or PATH).
    static var isInstalled: Bool {
        ["radicale", "xandikos"].allSatisfy { TestTools.executable($0) != nil }
    }

    /// Run the server tests when the servers are installed, and always in CI (where a missing
    /// server must fail, not skip).
    static var shouldRun: Bool { isInstalled || isCI }

    /// A shared, never-mutated server per kind with 25 cards and 5 events, for read-only tests.
    static func shared(_ kind: Kind) throws -> DAVServer {
        try shared(kind, cards: 25, events: 5)
    }

    /// A shared, never-mutated server per kind with 2,500 cards: a first sync hands the query's
    /// records over in three batches (1,000, 1,000, 500).
    static func sharedLarge(_ kind: Kind) throws -> DAVServer {
        try shared(kind, cards: 2_500, events: 0)
    }

    private struct SharedKey: Hashable {
        var kind: Kind
        var cards: Int
        var events: Int
    }

    private static func shared(_ kind: Kind, cards: Int, events: Int) throws -> DAVServer {
        try sharedServers.withLock { servers in
            let key = SharedKey(kind: kind, cards: cards, events: events)
            if let server = servers[key] { return server }
            let server = try DAVServer(kind, cards: cards, events: events)
            servers[key] = server
            return server
        }
    }

    private static let sharedServers = Mutex<[SharedKey: DAVServer]>([:])

    // MARK: - Store configurations

    func store(_ kind: StoreKind = .carddav, name: String = "contacts", batch: Int? = nil, password: String = DAVServer.password, url: String? = nil) -> StoreConfiguration {
        var options = WebDAVOptions(content: kind == .caldav ? .calendar : .addressBook)
        options.authentication = .basic(username: Self.username, password: Secret(password, source: "test"))
        if let batch { options.multigetBatch = batch }
        return StoreConfiguration(name: name, url: url ?? (kind == .caldav ? calendarURL : addressBookURL), options: options,
                                  location: ConfigurationLocation(file: "test.conf", line: 1))
    }

    /// Runs one pass of a WebDAVSource.
    func pass(_ store: StoreConfiguration, cursor: String?, configure: (SourceRun) -> Void = { _ in }) throws -> CollectedPass {
        let run = SourceRun(store: store, plan: PassPlan(cursor: cursor, reconcile: false))
        configure(run)
        return try run.runToCompletion()
    }

    // MARK: - Changing the server (curl, outside Ferry)

    private var curlAuth: [String] { ["-u", "\(Self.username):\(Self.password)"] }

    func put(_ path: String, _ body: String, contentType: String = "text/vcard; charset=utf-8") throws {
        try Shell.run("/usr/bin/curl", ["-sS", "-f", "-X", "PUT", "-H", "Content-Type: \(contentType)", "--data-binary", "@-"] + curlAuth + [baseURL + path], input: Data(body.utf8))
    }

    func delete(_ path: String) throws {
        try Shell.run("/usr/bin/curl", ["-sS", "-f", "-X", "DELETE"] + curlAuth + [baseURL + path])
    }

    func get(_ path: String) throws -> String {
        String(decoding: try Shell.run("/usr/bin/curl", ["-sS", "-f"] + curlAuth + [baseURL + path]), as: UTF8.self)
    }

    // MARK: - Generated content (mirrors dav_servers.py)

    static func expectedCardFields(_ i: Int) -> [String: String] {
        var emails = ["person-\(i)@example.com"]
        if i % 7 == 0 { emails.append("home-\(i)@example.org") }
        return [
            "UID": "ferry-card-\(i)",
            "FN": "Person \(i)",
            "EMAIL": emails.joined(separator: ", "),
            "TEL": "+1-555-\(i)",
            "ORG": "Org \(i), Team",
        ]
    }

    static func expectedEventFields(_ j: Int) -> [String: String] {
        let day = String(format: "%02d", j % 28 + 1)
        var fields = [
            "UID": "ferry-event-\(j)",
            "SUMMARY": "Event \(j)",
            "DTSTART": "202401\(day)T100000Z",
            "DTEND": "202401\(day)T110000Z",
        ]
        if j % 3 == 0 { fields["RRULE"] = "FREQ=WEEKLY;COUNT=4" }
        return fields
    }

    static func vCard(uid: String, name: String, email: String) -> String {
        "BEGIN:VCARD\r\nVERSION:3.0\r\nUID:\(uid)\r\nFN:\(name)\r\nN:;\(name);;;\r\nEMAIL:\(email)\r\nEND:VCARD\r\n"
    }
}

/// Line-ending-insensitive text, for comparing bodies a server re-serialized (Radicale).
func normalizedLines(_ text: String) -> [String] {
    // DAViCal stamps a REV on every card it stores.
    text.replacingOccurrences(of: "\r\n", with: "\n").split(separator: "\n").map(String.init).filter { !$0.hasPrefix("REV:") }.sorted()
}
