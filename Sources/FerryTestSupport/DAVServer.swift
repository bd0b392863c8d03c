import FerryKit
import Foundation
import Synchronization

/// A real CardDAV/CalDAV server on 127.0.0.1, started by `Tests/Servers/dav_servers.py`
/// with generated cards (`card-i.vcf`) and events (`event-j.ics`).
///
/// Radicale runs with htpasswd auth (`ferry` / `secret`); Xandikos has no auth and ignores the
/// Authorization header; DAViCal and sabre/dav 1.8 take HTTP Basic for `ferry` / `secret`.
/// Radicale and Xandikos come from `$FERRY_VENV/bin` or PATH (`pip install radicale xandikos`),
/// DAViCal and sabre/dav from Debian (`apt-get install davical postgresql php-sabre-dav php-sqlite3`).
/// The collections' and the principal's paths are the ones the script prints.
/// How the four differ for a sync client: `Tests/Servers/DAV-SERVERS.md`.
public final class DAVServer: @unchecked Sendable {
    public enum Kind: String, CaseIterable, Sendable {
        case radicale, xandikos, davical, sabredav, sogo

        /// The servers with sync-collection installed here (all three in CI, where a missing
        /// one fails): what the suites parametrised over `Kind.allCases` run against.
        public static var allCases: [Kind] { syncCollectionServers.filter(\.shouldRun) }
        /// Every server, including the Debian-packaged ones.
        public static let everyServer: [Kind] = [.radicale, .xandikos, .davical, .sabredav]
        /// Every server installed here (every one in CI, where a missing one fails).
        public static var available: [Kind] { everyServer.filter(\.shouldRun) }
        /// The servers the discovery, account and calendar-filter suites run against: every
        /// one, and SOGo (a groupware server whose stock account has an address book and a
        /// calendar both named `personal`, and whose calendar is also the scheduling outbox).
        public static var accountServers: [Kind] { (everyServer + [.sogo]).filter(\.shouldRun) }
        /// The servers with RFC 6578 sync-collection (sabre/dav 1.8 has none: Ferry's PROPFIND
        /// fallback path).
        public static let syncCollectionServers: [Kind] = [.radicale, .xandikos, .davical]

        /// Whether this server is installed (pip's in `$FERRY_VENV/bin` or PATH, apt's files).
        public var isInstalled: Bool {
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
        public var shouldRun: Bool { isInstalled || isCI }
    }

    /// What the test proxy does to addressbook-query / calendar-query answers.
    public enum QueryFault: Sendable {
        case refuse
        /// 403 with `DAV:supported-report` (RFC 3253 §3.6), as servers refuse a report they lack.
        case refuseAsUnsupported
        /// Only the first `keep` members, nothing saying the answer is partial.
        case subset(keep: Int)
        /// Only the first `keep` members, and a 507 response saying so.
        case truncate(keep: Int)
    }

    public static let username = "ferry"
    public static let password = "secret"

    public let kind: Kind
    public let cards: Int
    public let events: Int
    private let server: TestServer

    public var baseURL: String { server.baseURL }
    public var port: Int { server.port }
    /// From the script's `ADDRESSBOOK`, `CALENDAR` and `PRINCIPAL` lines.
    public let addressBookPath: String
    public let calendarPath: String
    public let principalPath: String
    public var addressBookURL: String { baseURL + addressBookPath }
    /// Where discovery of the whole account starts: the server's root, or for SOGo (whose
    /// root and well-known URLs answer its web application's login page without the proxy
    /// that would redirect them) its DAV root.
    public var accountURL: String { baseURL + (kind == .sogo ? "/SOGo/dav/" : "/") }
    public var calendarURL: String { baseURL + calendarPath }

    /// - Parameters:
    ///   - withoutSyncCollection: a proxy in front refuses sync-collection (501).
    ///   - truncateSync: a proxy in front answers sync-collection with at most this many
    ///     members, marked partial the RFC 6578 way, with a continuation token.
    ///   - queryFault: a proxy in front refuses collection queries (501), or cuts their
    ///     answers to `keep` members, silently or marked partial.
    ///   - collections: address books and calendars of each content (the account benchmarks).
    ///   - environment: added to the script's (`FERRY_VENV` for the benchmarks' own venv).
    ///   - log: where the server's standard error goes (the benchmarks keep Xandikos's line
    ///     per request out of their figures); nil: this process's.
    public init(_ kind: Kind, cards: Int, events: Int = 5, withoutSyncCollection: Bool = false, truncateSync: Int? = nil, queryFault: QueryFault? = nil,
                collections: Int = 1, environment: [String: String] = [:], log: String? = nil) throws {
        self.kind = kind
        self.cards = cards
        self.events = events
        var arguments = [
            TestServer.repositoryRoot.appendingPathComponent("Tests/Servers/dav_servers.py").path,
            "--server", kind.rawValue, "--cards", "\(cards)", "--events", "\(events)",
        ]
        if collections != 1 { arguments += ["--collections", "\(collections)"] }
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
        let server = if let log {
            try TestServer(executable: "/bin/sh", arguments: ["-c", #"log="$1"; shift; exec python3 "$@" 2>"$log""#, "sh", log] + arguments,
                           environment: environment)
        } else {
            try TestServer(executable: "/usr/bin/env", arguments: ["python3"] + arguments, environment: environment)
        }
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

    public func stop() { server.stop() }

    /// Whether both servers are installed (`$FERRY_VENV/bin` or PATH).
    public static var isInstalled: Bool {
        ["radicale", "xandikos"].allSatisfy { TestTools.executable($0) != nil }
    }

    /// Run the server tests when the servers are installed, and always in CI (where a missing
    /// server must fail, not skip).
    public static var shouldRun: Bool { isInstalled || isCI }

    /// A shared, never-mutated server per kind with 25 cards and 5 events, for read-only tests.
    public static func shared(_ kind: Kind) throws -> DAVServer {
        try shared(kind, cards: 25, events: 5)
    }

    /// A shared, never-mutated server per kind with 2,500 cards: a first sync hands the query's
    /// records over in three batches (1,000, 1,000, 500).
    public static func sharedLarge(_ kind: Kind) throws -> DAVServer {
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

    public func store(_ kind: StoreKind = .carddav, name: String = "contacts", batch: Int? = nil, password: String = DAVServer.password, url: String? = nil) -> StoreConfiguration {
        var options = WebDAVOptions(content: kind == .caldav ? .calendar : .addressBook)
        options.authentication = .basic(username: Self.username, password: Secret(password, source: "test"))
        if let batch { options.multigetBatch = batch }
        var store = StoreConfiguration(name: name, url: url ?? (kind == .caldav ? calendarURL : addressBookURL), options: options,
                                       location: ConfigurationLocation(file: "test.conf", line: 1))
        // Radicale builds a large answer before sending a byte: on a loaded machine that took
        // longer than the default 30 s low-speed window. The tests check what arrives, not the
        // server's speed.
        if cards >= 1_000 { store.session.lowSpeedTime = 300 }
        return store
    }

    /// Runs one pass of a WebDAVSource.
    public func pass(_ store: StoreConfiguration, cursor: String?, configure: (SourceRun) -> Void = { _ in }) throws -> CollectedPass {
        let run = SourceRun(store: store, plan: PassPlan(cursor: cursor, reconcile: false))
        configure(run)
        return try run.runToCompletion()
    }

    // MARK: - Changing the server (curl, outside Ferry)

    private var curlAuth: [String] { ["-u", "\(Self.username):\(Self.password)"] }

    public func put(_ path: String, _ body: String, contentType: String = "text/vcard; charset=utf-8") throws {
        try Shell.run("/usr/bin/curl", ["-sS", "-f", "-X", "PUT", "-H", "Content-Type: \(contentType)", "--data-binary", "@-"] + curlAuth + [baseURL + path], input: Data(body.utf8))
    }

    public func delete(_ path: String) throws {
        try Shell.run("/usr/bin/curl", ["-sS", "-f", "-X", "DELETE"] + curlAuth + [baseURL + path])
    }

    public func get(_ path: String) throws -> String {
        String(decoding: try Shell.run("/usr/bin/curl", ["-sS", "-f"] + curlAuth + [baseURL + path]), as: UTF8.self)
    }

    // MARK: - Generated content (mirrors dav_servers.py)

    public static func expectedCardFields(_ i: Int) -> [String: String] {
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

    public static func expectedEventFields(_ j: Int) -> [String: String] {
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

    public static func vCard(uid: String, name: String, email: String) -> String {
        "BEGIN:VCARD\r\nVERSION:3.0\r\nUID:\(uid)\r\nFN:\(name)\r\nN:;\(name);;;\r\nEMAIL:\(email)\r\nEND:VCARD\r\n"
    }
}

/// Line-ending-insensitive text, for comparing bodies a server re-serialized (Radicale).
public func normalizedLines(_ text: String) -> [String] {
    // DAViCal stamps a REV on every card it stores.
    text.replacingOccurrences(of: "\r\n", with: "\n").split(separator: "\n").map(String.init).filter { !$0.hasPrefix("REV:") }.sorted()
}
