import Foundation
import Logging
import Testing
@testable import FerryKit
import FerryTestSupport

/// A `dav-account` store against real servers: every collection of the account in a table of
/// its own, collections that appear, are renamed or disappear followed by the next pass, and
/// the view over all of them.
@Suite("dav-account stores against every DAV server", .enabled(if: DAVServer.shouldRun, "radicale/xandikos not installed: pip install radicale xandikos into $FERRY_VENV (bash scripts/test.sh does)"))
struct DAVAccountServerTests {
    /// A configuration with one `dav-account` store named `personal` at the server's root, run
    /// as `ferry sync` runs it.
    struct Account {
        let server: DAVServer
        let directory: TemporaryDirectory
        var extra: [String] = []

        init(_ server: DAVServer) throws {
            self.server = server
            directory = try TemporaryDirectory()
            try Data(DAVServer.password.utf8).write(to: URL(fileURLWithPath: directory.path("password")))
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: directory.path("password"))
        }

        var database: String { directory.path("replica.db") }

        func sync(_ names: [String] = []) throws -> [String: Result<PassReport, SyncError>] {
            let path = directory.path("ferry.conf")
            let text = """
                [ferry]
                database = \(database)
                [store personal]
                kind = dav-account
                url = \(server.accountURL)
                username = \(DAVServer.username)
                password = file:\(directory.path("password"))
                """ + "\n" + extra.joined(separator: "\n") + "\n"
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            let configuration = try ConfigurationLoader.load(path: path, environment: [:])
            let sync = try OneShotSync(configuration: configuration, storeNames: names, databasePath: database, logger: Logger(label: "test"))
            return Dictionary(sync.run(refresh: .milliseconds(50)) { _ in }.map { ($0.store, $0.result) }, uniquingKeysWith: { first, _ in first })
        }

        func query(_ sql: String) throws -> [String] {
            try Shell.sqlite(database, sql)
        }

        /// The table the replica gave the collection at `url`.
        func table(of url: String) throws -> String {
            try #require(try query("SELECT store FROM ferry_collections WHERE url = '\(url)'").first, "no table for \(url)")
        }
    }

    /// The home sets new collections go into: the parent of each existing one.
    static func home(of path: String) -> String {
        var parts = path.split(separator: "/").map(String.init)
        parts.removeLast()
        return "/" + parts.joined(separator: "/") + "/"
    }

    static func curl(_ server: DAVServer, _ method: String, _ path: String, body: String? = nil) throws {
        var arguments = ["-sS", "-f", "-o", "/dev/null", "-X", method, "-u", "\(DAVServer.username):\(DAVServer.password)"]
        if let body { arguments += ["-H", "Content-Type: application/xml", "--data-binary", body] }
        try Shell.run("/usr/bin/curl", arguments + [server.baseURL + path])
    }

    static func makeAddressBook(_ server: DAVServer, _ path: String, name: String) throws {
        try curl(server, "MKCOL", path, body: """
            <?xml version="1.0"?><D:mkcol xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:carddav"><D:set><D:prop>\
            <D:resourcetype><D:collection/><C:addressbook/></D:resourcetype><D:displayname>\(name)</D:displayname></D:prop></D:set></D:mkcol>
            """)
    }

    static func rename(_ server: DAVServer, _ path: String, to name: String) throws {
        try curl(server, "PROPPATCH", path, body: """
            <?xml version="1.0"?><D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><D:displayname>\(name)</D:displayname></D:prop></D:set></D:propertyupdate>
            """)
    }

    func succeeded(_ results: [String: Result<PassReport, SyncError>], sourceLocation: SourceLocation = #_sourceLocation) -> [String: PassReport] {
        var reports: [String: PassReport] = [:]
        for (store, result) in results {
            switch result {
            case .success(let report): reports[store] = report
            case .failure(let error): Issue.record("store \(store) failed: \(error)", sourceLocation: sourceLocation)
            }
        }
        return reports
    }

    @Test(arguments: DAVServer.Kind.accountServers)
    func everyCollectionIsATableOfItsOwnAndTheViewShowsThemAll(_ kind: DAVServer.Kind) throws {
        let server = try DAVServer(kind, cards: 5, events: 3)
        defer { server.stop() }
        let work = Self.home(of: server.addressBookPath) + "work-people/"
        try Self.makeAddressBook(server, work, name: "Work People")
        try server.put(work + "w1.vcf", DAVServer.vCard(uid: "w1", name: "Worker One", email: "w1@example.com"))
        let account = try Account(server)

        let reports = succeeded(try account.sync())
        // SOGo's address book and calendar are both `personal`: told apart by their content.
        let books = try account.table(of: server.addressBookURL)
        let calendar = try account.table(of: server.calendarURL)
        let colleagues = CollectionSelection.tableName(account: "personal", segment: "work-people")
        if kind == .sogo { #expect([books, calendar] == ["personal__personal_addressbook", "personal__personal_calendar"]) }
        #expect(Set(reports.keys) == ["personal", books, calendar, colleagues])
        #expect(reports["personal"]?.collections == 3)
        #expect(reports[books]?.counts.inserted == 5)
        #expect(reports[calendar]?.counts.inserted == 3)
        #expect(reports[colleagues]?.counts.inserted == 1)
        #expect(reports.values.allSatisfy { $0.isComplete })
        // One table each, and the view named after the account over all of them.
        #expect(try account.query("SELECT collection, count(*) FROM personal GROUP BY collection ORDER BY collection")
            == ["\(books)|5", "\(calendar)|3", "\(colleagues)|1"].sorted())
        // SOGo ignores the display name an extended MKCOL sets.
        if kind != .sogo { #expect(try account.query("SELECT displayname FROM ferry_collections WHERE store = '\(colleagues)'") == ["Work People"]) }
        #expect(try account.query("SELECT json_extract(fields, '$.FN') FROM \(colleagues)") == ["Worker One"])

        // Nothing changed: the collections stay, and no record is written. Where the server
        // lists each collection's sync-token (all but sabre/dav), discovery's listing says so
        // and the collections' passes make no request at all. SOGo's tokens are whole seconds
        // and a report's lags a change made within the current second: its listed token meets
        // the stored one only a second after the last change, so here its passes still ask.
        let asksNothing = kind != .sabredav && kind != .sogo
        let again = succeeded(try account.sync())
        #expect(Set(again.keys) == Set(reports.keys))
        #expect(again.values.allSatisfy { $0.counts.inserted == 0 && $0.counts.updated == 0 && $0.counts.deleted == 0 })
        if asksNothing {
            #expect(again.filter { $0.key != "personal" }.values.allSatisfy { $0.requests == 0 && $0.unchanged })
        }
        // One collection changes: its pass fetches the change; the others still ask nothing.
        try server.put(work + "w2.vcf", DAVServer.vCard(uid: "w2", name: "Worker Two", email: "w2@example.com"))
        let changed = succeeded(try account.sync())
        #expect(changed[colleagues]?.counts.inserted == 1)
        #expect(changed[books]?.counts.inserted == 0 && changed[calendar]?.counts.inserted == 0)
        if asksNothing {
            #expect(changed[colleagues].map { $0.requests > 0 } == true)
            #expect(changed[books]?.requests == 0 && changed[calendar]?.requests == 0)
        }
        // A collection may be synced on its own by its store's name.
        let alone = succeeded(try account.sync([colleagues]))
        #expect(Set(alone.keys) == [colleagues])
    }

    @Test(arguments: DAVServer.Kind.available)
    func collectionsThatAppearAreRenamedOrDisappearAreFollowed(_ kind: DAVServer.Kind) throws {
        let server = try DAVServer(kind, cards: 4, events: 2)
        defer { server.stop() }
        var account = try Account(server)
        _ = succeeded(try account.sync())
        let books = CollectionSelection.tableName(account: "personal", segment: server.addressBookPath.split(separator: "/").last.map(String.init) ?? "")

        // Appears, with a card: synced by the next pass, into a new table.
        let work = Self.home(of: server.addressBookPath) + "work-people/"
        try Self.makeAddressBook(server, work, name: "Work People")
        try server.put(work + "w1.vcf", DAVServer.vCard(uid: "w1", name: "Worker One", email: "w1@example.com"))
        let colleagues = CollectionSelection.tableName(account: "personal", segment: "work-people")
        let appeared = succeeded(try account.sync())
        #expect(appeared["personal"]?.collections == 3)
        #expect(appeared[colleagues]?.counts.inserted == 1)

        // Renamed: the same table, its new name recorded.
        try Self.rename(server, work, to: "Colleagues")
        _ = succeeded(try account.sync())
        #expect(try account.query("SELECT displayname FROM ferry_collections WHERE store = '\(colleagues)'") == ["Colleagues"])
        #expect(try account.query("SELECT count(*) FROM \(colleagues)") == ["1"])

        // Gone from the server: deleting all its rows is more than max-delete-share, so they
        // stay, the account is incomplete, and no other collection loses anything.
        try Self.curl(server, "DELETE", work)
        let gone = succeeded(try account.sync())
        let kept = try #require(gone["personal"])
        #expect(!kept.isComplete)
        #expect(kept.gaps == [.collectionKept(store: colleagues, url: server.baseURL + work, rows: 1, reason: "deleting all 1 is more than max-delete-share 50%; raise it to 1 to let them go")])
        #expect(gone[colleagues] == nil)
        #expect(gone[books]?.recordCount == 4)
        #expect(try account.query("SELECT count(*) FROM \(colleagues)") == ["1"])
        // The account's view still has its rows: they are the account's until they go.
        #expect(try account.query("SELECT count(*) FROM personal WHERE collection = '\(colleagues)'") == ["1"])
        #expect(try account.query("SELECT gone_since IS NOT NULL FROM ferry_collections WHERE store = '\(colleagues)'") == ["1"])

        // Let go: the rows are deleted (the change log says so) and the table dropped.
        account.extra = ["max-delete-share = 1"]
        let dropped = succeeded(try account.sync())
        #expect(dropped["personal"]?.isComplete == true)
        #expect(try account.query("SELECT count(*) FROM sqlite_schema WHERE name = '\(colleagues)'") == ["0"])
        #expect(try account.query("SELECT op FROM ferry_changes WHERE store = '\(colleagues)' ORDER BY seq") == ["insert", "delete"])
        #expect(try account.query("SELECT count(*) FROM personal WHERE collection = '\(books)'") == ["4"])
    }

    @Test(arguments: DAVServer.Kind.available)
    func narrowingTheChoiceDropsWhatItLeavesOut(_ kind: DAVServer.Kind) throws {
        let server = try DAVServer(kind, cards: 3, events: 2)
        defer { server.stop() }
        var account = try Account(server)
        account.extra = ["content = address-books"]
        let books = CollectionSelection.tableName(account: "personal", segment: server.addressBookPath.split(separator: "/").last.map(String.init) ?? "")
        let calendar = CollectionSelection.tableName(account: "personal", segment: server.calendarPath.split(separator: "/").last.map(String.init) ?? "")
        let first = succeeded(try account.sync())
        #expect(Set(first.keys) == ["personal", books])

        // The person chose calendars only: the address book's table goes, whatever
        // max-delete-share says, and the calendar comes.
        account.extra = ["content = calendars"]
        let second = succeeded(try account.sync())
        #expect(Set(second.keys) == ["personal", calendar])
        #expect(second["personal"]?.isComplete == true)
        #expect(try account.query("SELECT count(*) FROM sqlite_schema WHERE name = '\(books)'") == ["0"])
        #expect(try account.query("SELECT collection, count(*) FROM personal GROUP BY collection") == ["\(calendar)|2"])
    }

    /// Servers whose address books and calendars live in two homes, where a stock account
    /// has a default address book and a default calendar of one segment.
    static let twoHomes = DAVServer.Kind.available.filter { $0 == .xandikos || $0 == .sabredav }

    @Test(arguments: twoHomes)
    func anAddressBookAndACalendarOfOneSegmentAreTwoTables(_ kind: DAVServer.Kind) throws {
        let server = try DAVServer(kind, cards: 2, events: 1)
        defer { server.stop() }
        let bookHome = Self.home(of: server.addressBookPath), calendarHome = Self.home(of: server.calendarPath)
        #expect(bookHome != calendarHome)
        for segment in ["default", "Team-Cal"] {
            try Self.makeAddressBook(server, bookHome + segment + "/", name: segment)
            try server.put(bookHome + segment + "/c1.vcf", DAVServer.vCard(uid: "c1-\(segment)", name: "Card \(segment)", email: "c@example.com"))
            try Self.curl(server, "MKCALENDAR", calendarHome + segment + "/", body: """
                <?xml version="1.0"?><C:mkcalendar xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav"><D:set><D:prop>\
                <D:displayname>\(segment)</D:displayname></D:prop></D:set></C:mkcalendar>
                """)
            try server.put(calendarHome + segment + "/e1.ics", """
                BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//ferry//test//EN\r\nBEGIN:VEVENT\r\nUID:e1-\(segment)\r\nDTSTAMP:20260101T000000Z\r\n\
                DTSTART:20260105T100000Z\r\nDTEND:20260105T110000Z\r\nSUMMARY:Event \(segment)\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n
                """, contentType: "text/calendar; charset=utf-8")
        }
        let account = try Account(server)
        let reports = succeeded(try account.sync())
        #expect(reports["personal"]?.isComplete == true)
        for segment in ["default", "Team-Cal"] {
            let book = CollectionSelection.tableName(account: "personal", segment: segment, qualifier: "addressbook")
            let calendar = CollectionSelection.tableName(account: "personal", segment: segment, qualifier: "calendar")
            #expect(reports[book]?.counts.inserted == 1)
            #expect(reports[calendar]?.counts.inserted == 1)
            #expect(try account.query("SELECT json_extract(fields, '$.FN') FROM \(book)") == ["Card \(segment)"])
            #expect(try account.query("SELECT json_extract(fields, '$.SUMMARY') FROM \(calendar)") == ["Event \(segment)"])
        }
        #expect(CollectionSelection.tableName(account: "personal", segment: "Team-Cal", qualifier: "calendar").hasPrefix("personal__team_cal_"))
        // The names hold at the next pass.
        let again = succeeded(try account.sync())
        #expect(Set(again.keys) == Set(reports.keys))
    }
}
