@testable import FerryKit
import FerryTestSupport
import Foundation
import Testing

/// Parsing and validation, with exact file:line:key for every kind of problem.
@Suite struct ConfigurationLoaderTests {
    static let file = "/etc/ferry/test.conf"
    static let environment = ["STATE_DIRECTORY": "/var/lib/ferry", "RUNTIME_DIRECTORY": "/run/ferry"]

    private func problems(_ text: String, environment: [String: String] = environment) -> [ConfigurationProblem] {
        do {
            _ = try ConfigurationLoader.parse(text: text, file: Self.file, environment: environment)
            return []
        } catch {
            return error.problems
        }
    }

    private func parse(_ text: String, environment: [String: String] = environment) throws -> FerryConfiguration {
        try ConfigurationLoader.parse(text: text, file: Self.file, environment: environment)
    }

    /// One setting, one documented key (`look-back`) for every kind; `lookback`, which Parse
    /// stores took, is read as the same key by every kind.
    @Test func lookBackIsOneKeyInBothSpellings() throws {
        for key in ["look-back", "lookback"] {
            #expect(problems("[store items]\nkind = json\nurl = https://api.example.com/items\n\(key) = 2s\n").isEmpty, "\(key)")
            // Parse reads it under either spelling: a value out of range is reported as written.
            let reported = problems("[store q]\nkind = parse\nurl = https://p.example.com/parse\nclass = Quote\n\(key) = 2d\n")
            #expect(reported.contains { $0.key == key && $0.message == "must be at most 1d, got '2d'" }, "\(reported)")
        }
    }

    @Test func minimalStore_getsEveryDefault() throws {
        let configuration = try parse("""
            [store items]
            kind = json
            url = https://api.example.com/items
            """)
        #expect(configuration.global.databasePath == "/var/lib/ferry/ferry.db")
        #expect(configuration.global.runtimeDirectory == "/run/ferry")
        #expect(configuration.global.maxConcurrentPasses == 4)
        #expect(configuration.global.changeRetention == .seconds(30 * 86_400))
        #expect(configuration.global.stuckPassTimeout == .seconds(600))
        #expect(configuration.global.logLevel == .info)
        #expect(configuration.global.session == SessionConfiguration())
        let store = try #require(configuration.stores.first)
        #expect(store.name == "items")
        #expect(store.kind == .json)
        #expect(store.options.as(JSONCollectionOptions.self) == JSONCollectionOptions())
        #expect(store.url == "https://api.example.com/items")
        #expect(store.location == ConfigurationLocation(file: Self.file, line: 1))
        #expect(store.interval == .seconds(300))
        #expect(store.session == SessionConfiguration())
    }

    @Test func everyKey_isReadIntoTheModel() throws {
        let configuration = try parse("""
            # global
            [ferry]
            database = data/replica.db
            max-concurrent-passes = 8
            connect-timeout = 5s
            total-timeout = 0
            low-speed-limit = 10KiB
            low-speed-time = 1m
            max-response-size = 64MiB
            log-level = debug
            keep-changes = 7d
            stuck-pass-timeout = 15m
            backoff-initial = 2s
            backoff-max = 10m
            backoff-permanent = 1h

            [store contacts]
            kind = carddav
            url = https://dav.example.com/book/
            interval = 15m
            jitter = 0
            priority = high
            header.X-Client = ferry-test
            deletion = tombstone
            reconcile-interval = never
            max-delete-share = 20%
            on-bad-record = fail
            max-record-size = 2MiB
            header.Accept = text/vcard
            multiget-batch = 50
            column.email = text $.EMAIL
            column.rev = integer $.REV unindexed
            connect-timeout = 2s
            max-response-size = 1MB
            """)
        let global = configuration.global
        #expect(global.databasePath == "/etc/ferry/data/replica.db")
        #expect(global.maxConcurrentPasses == 8)
        #expect(global.session.connectTimeout == 5)
        #expect(global.session.totalTimeout == 0)
        #expect(global.session.lowSpeedLimit == 10_240)
        #expect(global.session.lowSpeedTime == 60)
        #expect(global.session.maxResponseBytes == 64 << 20)
        #expect(global.logLevel == .debug)
        #expect(global.changeRetention == .seconds(7 * 86_400))
        #expect(global.stuckPassTimeout == .seconds(900))
        #expect(global.backoff.base == .seconds(2))
        #expect(global.backoff.cap == .seconds(600))
        #expect(global.backoff.permanentFailureDelay == .seconds(3600))
        let store = try #require(configuration.store(named: "contacts"))
        #expect(store.interval == .seconds(900))
        #expect(store.jitter == .zero)
        #expect(store.priority == .high)
        #expect(store.deletion == .tombstone)
        #expect(store.reconcileInterval == nil)
        #expect(store.maxDeleteShare == 0.2)
        #expect(store.badRecordPolicy == .fail)
        #expect(store.maxRecordBytes == 2 << 20)
        #expect(store.headers == ConfiguredHeaders([.init(name: "X-Client", value: .text("ferry-test")), .init(name: "Accept", value: .text("text/vcard"))]))
        var options = WebDAVOptions(content: .addressBook)
        options.multigetBatch = 50
        #expect(store.options.as(WebDAVOptions.self) == options)
        #expect(store.columns == [
            TypedColumn(name: "email", type: .text, path: "$.EMAIL"),
            TypedColumn(name: "rev", type: .integer, path: "$.REV", indexed: false),
        ])
        // Store overrides on top of the global defaults.
        #expect(store.session.connectTimeout == 2)
        #expect(store.session.maxResponseBytes == 1_000_000)
        #expect(store.session.lowSpeedLimit == 10_240)
        #expect(store.session.totalTimeout == 0)
    }

    @Test func fileURL_relativeToTheConfigurationDirectory_onlyForJSON() throws {
        let configuration = try parse("""
            [store demo]
            kind = json
            url = file:demo/quotes-0001.json
            pagination = next-url:next
            [store absolute]
            kind = json
            url = file:///srv/data/page.json
            pagination = none
            """)
        #expect(configuration.stores[0].url == "file:///etc/ferry/demo/quotes-0001.json")
        #expect(configuration.stores[0].session.allowedProtocols == ["http", "https", "file"])
        #expect(configuration.stores[1].url == "file:///srv/data/page.json")
        #expect(problems("""
            [store book]
            kind = carddav
            url = file:book.vcf
            """) == [.init(file: Self.file, line: 3, key: "url", message: "file: URLs are only allowed for kind = json")])
    }

    @Test func everyProblemKind_isReportedWithFileLineAndKey() {
        let found = problems("""
            stray = 1
            [ferry]
            database = /var/lib/ferry/x.db
            max-concurrent-passes = lots
            color = blue
            database = /tmp/y.db
            [network]
            ignored = yes
            [store Bad-Name]
            kind = json
            [store ferry_meta]
            [store one]
            kind = ftp
            url = ftp://example.com/
            interval = 30
            page-size = 0
            priority = urgent
            column.email = text email
            [store one]
            kind = json
            [store two]
            url = https://example.com/
            [store three]
            kind = json
            url = https:///nohost
            max-delete-share = 120%
            reconcile-interval = sometimes
            deletion = soft
            on-bad-record = explode
            max-record-size = big
            unknown-key = 1
            this line has no equals sign
            """)
        let expected: [ConfigurationProblem] = [
            .init(file: Self.file, line: 1, key: "stray", message: "key outside any section (start the file with [ferry] or [store NAME])"),
            .init(file: Self.file, line: 4, key: "max-concurrent-passes", message: "expected a whole number, got 'lots'"),
            .init(file: Self.file, line: 5, key: "color", message: "unknown key in [ferry] (known: backoff-initial, backoff-max, backoff-permanent, ca-file, connect-timeout, database, heartbeat-interval, heartbeat-url, keep-changes, log-level, low-speed-limit, low-speed-time, max-concurrent-passes, max-response-size, metrics-listen, notify-listen, notify-public-url, read-retries, stuck-pass-timeout, total-timeout)"),
            .init(file: Self.file, line: 6, key: "database", message: "duplicate key (already set on line 3)"),
            .init(file: Self.file, line: 7, message: "unknown section '[network]' (expected [ferry] or [store NAME])"),
            .init(file: Self.file, line: 9, message: "invalid store name 'Bad-Name': use lowercase letters, digits and '_', starting with a letter, at most 63 characters"),
            .init(file: Self.file, line: 11, message: "invalid store name 'ferry_meta': names starting with ferry_ or sqlite_ are reserved"),
            .init(file: Self.file, line: 13, key: "kind", message: "expected one of parse, json, carddav, caldav or dav-account, got 'ftp'"),
            .init(file: Self.file, line: 14, key: "url", message: "URL scheme must be http or https (file: only for kind = json), got 'ftp'"),
            .init(file: Self.file, line: 15, key: "interval", message: "expected a duration like 30s, 5m, 2h, 1d or 250ms, got '30'"),
            .init(file: Self.file, line: 17, key: "priority", message: "expected one of high, normal, low, got 'urgent'"),
            .init(file: Self.file, line: 18, key: "column.email", message: "column path must be a JSON path starting with '$', e.g. $.email"),
            .init(file: Self.file, line: 19, message: "duplicate store 'one' (already defined on line 12)"),
            .init(file: Self.file, line: 21, key: "kind", message: "store 'two' needs kind = parse, json, carddav, caldav or dav-account"),
            .init(file: Self.file, line: 25, key: "url", message: "URL needs a host: 'https:///nohost'"),
            .init(file: Self.file, line: 26, key: "max-delete-share", message: "expected a share like 50% or 0.5 (0% to 100%), got '120%'"),
            .init(file: Self.file, line: 27, key: "reconcile-interval", message: "expected a duration like 30s, 5m, 2h, 1d or 250ms, got 'sometimes'"),
            .init(file: Self.file, line: 28, key: "deletion", message: "expected one of hard, tombstone, got 'soft'"),
            .init(file: Self.file, line: 29, key: "on-bad-record", message: "expected one of skip, fail, got 'explode'"),
            .init(file: Self.file, line: 30, key: "max-record-size", message: "expected a size like 1048576, 512KiB, 256MiB or 1MB, got 'big'"),
            .init(file: Self.file, line: 31, key: "unknown-key", message: "unknown key; a json store takes \(StoreKind.json.optionKeys.union(StoreKind.json.secretKeys).sorted().joined(separator: ", ")), the keys every store takes, column.NAME and header.NAME"),
            .init(file: Self.file, line: 32, message: "expected 'key = value', a [section] or a # comment"),
        ]
        #expect(found.count == expected.count)
        for (got, want) in zip(found, expected) {
            #expect(got == want)
        }
    }

    @Test func backoffMustBePositiveAndOrdered() {
        #expect(problems("""
            [ferry]
            backoff-initial = 0
            """) == [.init(file: Self.file, line: 2, key: "backoff-initial", message: "must be more than 0")])
        #expect(problems("""
            [ferry]
            backoff-max = 1m
            backoff-initial = 2m
            """) == [.init(file: Self.file, line: 3, key: "backoff-initial", message: "backoff-initial (2m) is more than backoff-max (1m)")])
    }

    @Test func missingURL_andKindSpecificKeysOfAnotherKind() {
        #expect(problems("""
            [store a]
            kind = parse
            multiget-batch = 10
            """) == [
            .init(file: Self.file, line: 1, key: "url", message: "store 'a' needs a url"),
            .init(file: Self.file, line: 3, key: "multiget-batch",
                  message: "not a key of parse stores (it is one of carddav, caldav and dav-account stores)"),
        ])
    }

    @Test func problemDescription_namesFileLineAndKey() {
        let problem = ConfigurationProblem(file: "/etc/ferry/ferry.conf", line: 12, key: "interval", message: "bad")
        #expect(problem.description == "/etc/ferry/ferry.conf:12: key 'interval': bad")
        #expect(ConfigurationProblem(file: "f", line: 3, message: "m").description == "f:3: m")
        #expect(ConfigurationProblem(file: "f", line: 0, message: "m").description == "f: m")
    }

    @Test func databaseDefault_followsSystemdThenXDGThenHome() {
        #expect(GlobalConfiguration.defaultDatabasePath(environment: ["STATE_DIRECTORY": "/var/lib/ferry:/var/lib/other"])
            == "/var/lib/ferry/ferry.db")
        #expect(GlobalConfiguration.defaultDatabasePath(environment: ["XDG_STATE_HOME": "/home/u/.st", "HOME": "/home/u"], userID: 1000)
            == "/home/u/.st/ferry/ferry.db")
        #expect(GlobalConfiguration.defaultDatabasePath(environment: ["HOME": "/home/u"], userID: 1000) == "/home/u/.local/state/ferry/ferry.db")
        // Root outside the unit (sudo ferry status) reads what the service writes.
        #expect(GlobalConfiguration.defaultDatabasePath(environment: ["HOME": "/root"], userID: 0) == "/var/lib/ferry/ferry.db")
        #expect(GlobalConfiguration.defaultRuntimeDirectory(environment: ["RUNTIME_DIRECTORY": "/run/ferry"], userID: 1000) == "/run/ferry")
        #expect(GlobalConfiguration.defaultRuntimeDirectory(environment: [:], userID: 0) == "/run/ferry")
        #expect(GlobalConfiguration.defaultRuntimeDirectory(environment: ["XDG_RUNTIME_DIR": "/run/user/1000"], userID: 1000)
            == "/run/user/1000/ferry")
        #expect(ConfigurationLoader.defaultPath(environment: [:]) == "/etc/ferry/ferry.conf")
        #expect(ConfigurationLoader.defaultPath(environment: ["FERRY_CONFIG": "/tmp/x.conf"]) == "/tmp/x.conf")
    }

    @Test func load_missingFileOrDirectory_isOneLineZeroProblem() {
        #expect(throws: ConfigurationErrors(problems: [.init(file: "/nonexistent/ferry.conf", line: 0,
            message: "no such file (create it from etc/ferry/ferry.conf, or give another path)")])) {
            try ConfigurationLoader.load(path: "/nonexistent/ferry.conf", environment: [:])
        }
        #expect(throws: ConfigurationErrors(problems: [.init(file: "/tmp", line: 0, message: "is a directory, not a configuration file")])) {
            try ConfigurationLoader.load(path: "/tmp", environment: [:])
        }
    }

    @Test func load_readsARealFile_andResolvesPathsAgainstItsDirectory() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-load-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Data("[ferry]\ndatabase = replica.db\n[store a]\nkind = json\nurl = file:pages/1.json\npagination = none\n".utf8)
            .write(to: URL(fileURLWithPath: directory + "/ferry.conf"))
        let configuration = try ConfigurationLoader.load(path: directory + "/ferry.conf", environment: [:])
        #expect(configuration.global.databasePath == directory + "/replica.db")
        #expect(configuration.stores.first?.url == URL(fileURLWithPath: directory + "/pages/1.json").absoluteString)
    }

    @Test func bundledDefaultConfiguration_parsesWithZeroProblems() throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("etc/ferry/ferry.conf").path
        let configuration: FerryConfiguration
        do {
            configuration = try ConfigurationLoader.load(path: path, environment: ["STATE_DIRECTORY": "/var/lib/ferry"])
        } catch {
            Issue.record("etc/ferry/ferry.conf has problems:\n\(error)")
            return
        }
        let demo = try #require(configuration.store(named: "demo"))
        #expect(demo.kind == .json)
        let directory = (path as NSString).deletingLastPathComponent
        #expect(demo.url == URL(fileURLWithPath: directory + "/demo/quotes-0001.json").absoluteString)
        let options = try #require(demo.options.as(JSONCollectionOptions.self))
        #expect(options.pagination == .nextURL(path: "next"))
        #expect(options.recordsPath == "results")
        #expect(options.idField == "id")
        #expect(options.versionField == "updated_at")
        #expect(demo.session.allowedProtocols.contains("file"))
        #expect(configuration.global.databasePath == "/var/lib/ferry/ferry.db")
    }

    @Test func headerKeys_areSentByEveryKind_andCredentialsOnlyByReference() throws {
        let configuration = try parse("""
            [store api]
            kind = json
            url = https://api.example.com/items
            header.Accept = application/vnd.github+json
            """)
        #expect(configuration.stores[0].headers == ConfiguredHeaders([.init(name: "Accept", value: .text("application/vnd.github+json"))]))
        #expect(problems("""
            [store api]
            kind = carddav
            url = https://dav.example.com/book/
            header.X-Api-Key = s3cr3t-value
            header.Depth = 1
            header.Bad Name = x
            header.Authorization = credential:missing
            """) == [
            .init(file: Self.file, line: 4, key: "header.X-Api-Key", message: "X-Api-Key carries a credential: write credential:NAME (systemd LoadCredential=) or file:/path/to/secret, not the value"),
            .init(file: Self.file, line: 5, key: "header.Depth", message: "Depth is set by Ferry for each request and cannot be configured"),
            .init(file: Self.file, line: 6, key: "header.Bad Name", message: "'Bad Name' is not an HTTP header name"),
            .init(file: Self.file, line: 7, key: "header.Authorization", message: "credential:missing is not at /etc/ferry/credentials/missing, and $CREDENTIALS_DIRECTORY is not set (ferry runs outside the unit): put the secret there (chmod 600) and load it with LoadCredential=missing:/etc/ferry/credentials/missing in the unit, or use file:/path"),
        ])
    }

    @Test func kindOptions_areCheckedAtLoad_withFileLineAndKey() {
        #expect(problems("""
            [store quotes]
            kind = parse
            url = https://parse.example.com/parse
            class = Bad/Name
            lookback = 2d
            page-size = 0
            """) == [
            .init(file: Self.file, line: 1, key: "application-id", message: "store 'quotes' needs application-id (the app's X-Parse-Application-Id)"),
            .init(file: Self.file, line: 1, key: "rest-api-key", message: "store 'quotes' needs rest-api-key = credential:NAME (or master-key)"),
            .init(file: Self.file, line: 4, key: "class", message: "\"Bad/Name\" is not a Parse class name (letters, digits and '_')"),
            .init(file: Self.file, line: 5, key: "lookback", message: "must be at most 1d, got '2d'"),
            .init(file: Self.file, line: 6, key: "page-size", message: "must be between 1 and 100000, got 0"),
        ])
        #expect(problems("""
            [store items]
            kind = json
            url = file:items.json
            id-field = a..b
            pagination = sideways
            """) == [
            .init(file: Self.file, line: 4, key: "id-field", message: "\"a..b\" is not a dotted field path such as id or data.items"),
            .init(file: Self.file, line: 5, key: "pagination", message: "\"sideways\" is not one of " + JSONCollectionOptions.paginationForms),
        ])
        #expect(problems("""
            [store items]
            kind = json
            url = file:items.json
            """) == [
            .init(file: Self.file, line: 1, key: "pagination", message: "link pagination needs HTTP headers; a chain of file: pages uses next-url:<path>"),
        ])
        #expect(problems("""
            [store book]
            kind = carddav
            url = https://dav.example.com/book/
            multiget-batch = 0
            username = alice
            page-size = 10
            """) == [
            .init(file: Self.file, line: 4, key: "multiget-batch", message: "must be between 1 and 10000, got 0"),
            .init(file: Self.file, line: 5, key: "username", message: "store 'book' has a username but no password (password = credential:NAME)"),
            .init(file: Self.file, line: 6, key: "page-size", message: "not a key of carddav stores (it is one of parse and json stores)"),
        ])
    }

    @Test func readBeforeWrite_isAChoice_andReachesAnAccountsCollections() throws {
        let configuration = try parse("""
            [store book]
            kind = carddav
            url = https://dav.example.com/book/
            read-before-write = yes

            [store account]
            kind = dav-account
            url = https://dav.example.com/
            read-before-write = no

            [store calendar]
            kind = caldav
            url = https://dav.example.com/cal/
            """)
        let stores = Dictionary(uniqueKeysWithValues: configuration.stores.map { ($0.name, $0) })
        #expect(stores["book"]?.options.as(WebDAVOptions.self)?.readBeforeWrite == .always)
        #expect(stores["calendar"]?.options.as(WebDAVOptions.self)?.readBeforeWrite == .auto)
        #expect(stores["account"]?.options.as(DAVAccountOptions.self)?.readBeforeWrite == .never)
        #expect(problems("""
            [store book]
            kind = carddav
            url = https://dav.example.com/book/
            read-before-write = sometimes
            """) == [.init(file: Self.file, line: 4, key: "read-before-write", message: "expected one of auto, yes, no; got 'sometimes'")])
    }

    @Test func columnsThatCannotWork_areRefusedAtLoad() {
        #expect(problems("""
            [store items]
            kind = json
            url = https://api.example.com/items
            column.a = text $..x
            column.b = text $.a b
            column.c = integer $.list[x]
            column.body = text $.body
            column.ferry_x = text $.x
            column.ok = text $.list[0].name
            column.odd = text $."odd.key".x
            """) == [
            .init(file: Self.file, line: 4, key: "column.a", message: "'$..x' is not a JSON path SQLite can read: write $.field, $.a.b, $.list[0] or $.\"odd key\""),
            .init(file: Self.file, line: 5, key: "column.b", message: "expected 'TYPE PATH' or 'TYPE PATH unindexed', e.g. text $.email"),
            .init(file: Self.file, line: 6, key: "column.c", message: "'$.list[x]' is not a JSON path SQLite can read: write $.field, $.a.b, $.list[0] or $.\"odd key\""),
            .init(file: Self.file, line: 7, key: "column.body", message: "column body would replace a column every store table has (body, deleted, fields, first_seen, id, last_synced, version); choose another name"),
            .init(file: Self.file, line: 8, key: "column.ferry_x", message: "column ferry_x would replace a column every store table has (body, deleted, fields, first_seen, id, last_synced, version); choose another name"),
        ])
    }

    @Test func emptyConfigurationsAndNoStores_warn() throws {
        #expect(try parse("").warnings.map(\.message) == ["the configuration is empty: ferryd will run and sync nothing"])
        #expect(try parse("[ferry]\nlog-level = debug\n").warnings.map(\.message) == ["no [store NAME] section: ferryd will run and sync nothing"])
        #expect(try parse("[store a]\nkind = json\nurl = https://x/y\n").warnings.isEmpty)
    }

    @Test func garbage_isCappedInSizeAndProblems() throws {
        let found = problems(String(repeating: "garbage line\n", count: 500))
        #expect(found.count == ConfigurationLoader.maxProblems + 1)
        #expect(found.last?.message == "and 400 more problems (is this a Ferry configuration?)")
        let directory = try TemporaryDirectory()
        let path = directory.path("big.conf")
        try Data(repeating: 0x61, count: ConfigurationLoader.maxFileBytes + 1).write(to: URL(fileURLWithPath: path))
        #expect(throws: ConfigurationErrors(problems: [.init(file: path, line: 0,
            message: "is \(ConfigurationLoader.maxFileBytes + 1) bytes; a configuration larger than 16384 KiB is refused (is this the right file?)")])) {
            try ConfigurationLoader.load(path: path, environment: [:])
        }
    }
}
