import Foundation
import Logging

/// Reads and validates Ferry's configuration file.
///
///     let configuration = try ConfigurationLoader.load(path: ConfigurationLoader.defaultPath())
///
/// Parsing never stops at the first mistake: every problem (with file, line and key) is
/// collected and thrown together in ``ConfigurationErrors``. A configuration is returned only
/// when there are none, so ferryd never runs on half of a file.
public enum ConfigurationLoader {
    /// `$FERRY_CONFIG` when set, else `/etc/ferry/ferry.conf`.
    public static func defaultPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let path = environment["FERRY_CONFIG"], !path.isEmpty {
            return path
        }
        return "/etc/ferry/ferry.conf"
    }

    /// Reads the file at `path` and validates it.
    public static func load(
        path: String,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        secrets: SecretHandling = .resolve,
        storeProblems: StoreProblemHandling = .refuseFile
    ) throws(ConfigurationErrors) -> FerryConfiguration {
        let absolute = ConfigurationValueReader.absolute(path, against: FileManager.default.currentDirectoryPath)
        // Checked up front so the one-line error says what to do, in words people know.
        // `fileExists` says "no" for a file in a directory this user may not enter, which
        // would send people off to create a file that exists.
        if case .denied(_, let reason)? = ReplicaAccessError.check(readable: absolute) {
            var errors = ConfigurationErrors(problems: [.init(file: path, line: 0, message: "permission denied: \(reason)")])
            errors.isPermissionDenied = true
            throw errors
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: absolute, isDirectory: &isDirectory) else {
            throw ConfigurationErrors(problems: [.init(file: path, line: 0,
                message: "no such file (create it from etc/ferry/ferry.conf, or give another path)")])
        }
        guard !isDirectory.boolValue else {
            throw ConfigurationErrors(problems: [.init(file: path, line: 0, message: "is a directory, not a configuration file")])
        }
        if let size = (try? FileManager.default.attributesOfItem(atPath: absolute)[.size]) as? Int, size > maxFileBytes {
            throw ConfigurationErrors(problems: [.init(file: path, line: 0,
                message: "is \(size) bytes; a configuration larger than \(maxFileBytes / 1024) KiB is refused (is this the right file?)")])
        }
        guard let data = FileManager.default.contents(atPath: absolute) else {
            throw ConfigurationErrors(problems: [.init(file: path, line: 0, message: "cannot read the file (permission denied?)")])
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw ConfigurationErrors(problems: [.init(file: path, line: 0, message: "not UTF-8 text")])
        }
        return try parse(text: text, file: absolute, environment: serviceEnvironment(forConfiguration: absolute, environment), secrets: secrets,
                         storeProblems: storeProblems)
    }

    /// The environment a unit gives ferryd, for a unit's own configuration file read outside
    /// it: `/etc/ferry/ferry.conf` is ferryd.service's (state in /var/lib/ferry, runtime in
    /// /run/ferry) and `/etc/ferry/NAME.conf` is ferryd@NAME's (``FerryInstance``), so `ferry
    /// status` run by anyone (an application in the replica's group) finds the replica and the
    /// runtime files the service writes, not a private default of its own. Unchanged inside a
    /// unit (which sets the variables) and for any other file.
    static func serviceEnvironment(forConfiguration absolute: String, _ environment: [String: String]) -> [String: String] {
        guard environment["STATE_DIRECTORY"] == nil, environment["RUNTIME_DIRECTORY"] == nil,
              (absolute as NSString).deletingLastPathComponent == "/etc/ferry", absolute.hasSuffix(".conf") else { return environment }
        let name = String((absolute as NSString).lastPathComponent.dropLast(".conf".count))
        if name == "ferry" {
            var service = environment
            service["STATE_DIRECTORY"] = "/var/lib/ferry"
            service["RUNTIME_DIRECTORY"] = "/run/ferry"
            return service
        }
        return (try? FerryInstance(name))?.environment(environment) ?? environment
    }

    /// Validates configuration `text` as if read from `file` (relative paths in it resolve
    /// against `file`'s directory).
    public static func parse(
        text: String,
        file: String,
        environment: [String: String],
        secrets: SecretHandling = .resolve,
        storeProblems: StoreProblemHandling = .refuseFile
    ) throws(ConfigurationErrors) -> FerryConfiguration {
        let baseDirectory = (ConfigurationValueReader.absolute(file, against: FileManager.default.currentDirectoryPath)
            as NSString).deletingLastPathComponent
        let syntax = ConfigurationSyntax(text: text, file: file)
        var problems = syntax.problems

        var reader = ConfigurationValueReader(file: file)
        let globalEntries = syntax.sections.filter { $0.kind == .global }.flatMap(\.entries)
        var global = readGlobal(reader.unique(globalEntries), reader: &reader, environment: environment,
                                baseDirectory: baseDirectory, secrets: secrets)
        problems += reader.problems

        var stores: [StoreConfiguration] = []
        var refused: [RefusedStore] = []
        var storeLines: [String: Int] = [:]
        for section in syntax.sections {
            guard case .store(let name) = section.kind else { continue }
            if let nameProblem = StoreSectionReader.problem(withName: name) {
                problems.append(.init(file: file, line: section.line, message: nameProblem))
                continue
            }
            if let first = storeLines[name] {
                problems.append(.init(file: file, line: section.line,
                                      message: "duplicate store '\(name)' (already defined on line \(first))"))
                continue
            }
            storeLines[name] = section.line
            var storeReader = StoreSectionReader(file: file, baseDirectory: baseDirectory, environment: environment,
                                                 defaults: global.session, secretHandling: secrets)
            let store = storeReader.read(name: name, section: section)
            // A problem of this section's own fails this store alone, when so asked.
            if storeProblems == .setStoreApart, !storeReader.values.problems.isEmpty {
                refused.append(RefusedStore(name: name, problems: ConfigurationErrors(problems: storeReader.values.problems)))
                continue
            }
            if let store { stores.append(store) }
            problems += storeReader.values.problems
        }
        // A child table's view is named STORE__NAME, beside the stores' tables.
        for store in stores {
            for table in store.childTables where storeLines[table.viewName(of: store.name)] != nil {
                problems.append(.init(file: file, line: store.location.line, key: "table.\(table.name)",
                                      message: "its view \(table.viewName(of: store.name)) would have the name of store \(table.viewName(of: store.name)); name the table otherwise"))
            }
        }

        for store in stores where store.notify?.scheme == .hubspot && global.notifyPublicURL == nil {
            problems.append(.init(file: file, line: store.location.line, key: "notify",
                message: "notify = hubspot signs the URL it calls: set notify-public-url = https://HOST/PATH in [ferry] (the store's URL is it followed by /\(store.name))"))
        }
        guard problems.isEmpty else {
            // Stable sort: within a line, problems keep the order they were found in.
            var ordered = problems.enumerated().sorted { ($0.element.line, $0.offset) < ($1.element.line, $1.offset) }.map(\.element)
            if ordered.count > maxProblems {
                // A file that is not a configuration at all would print one line per line.
                let more = ordered.count - maxProblems
                ordered = Array(ordered.prefix(maxProblems))
                ordered.append(.init(file: file, line: ordered.last?.line ?? 0, message: "and \(more) more problems (is this a Ferry configuration?)"))
            }
            throw ConfigurationErrors(problems: ordered)
        }
        var warnings: [ConfigurationProblem] = []
        if let endpoint = global.metricsListen, !endpoint.isLoopback {
            let line = globalEntries.last { $0.key == "metrics-listen" }?.line ?? 0
            warnings.append(.init(file: file, line: line, message: "metrics-listen = \(endpoint) is reachable from other machines: the metrics name every store; firewall it or serve them through a proxy with authentication"))
        }
        if let endpoint = global.notifyListen, !endpoint.isLoopback {
            let line = globalEntries.last { $0.key == "notify-listen" }?.line ?? 0
            warnings.append(.init(file: file, line: line, message: "notify-listen = \(endpoint) is reachable from other machines: put it on loopback behind the reverse proxy that terminates TLS"))
        }
        if global.notifyListen == nil, stores.contains(where: { $0.notify != nil }) {
            global.notifyListen = GlobalConfiguration.defaultNotifyListen
        }
        if stores.isEmpty, refused.isEmpty {
            let empty = syntax.sections.isEmpty
            warnings.append(.init(file: file, line: 0, message: empty
                ? "the configuration is empty: ferryd will run and sync nothing"
                : "no [store NAME] section: ferryd will run and sync nothing"))
        }
        var configuration = FerryConfiguration(global: global, stores: stores, warnings: warnings).authorizing(databasePath: global.databasePath)
        configuration.refusedStores = refused
        return configuration
    }

    /// Larger files are refused before they are parsed: a configuration is a few KiB, and one
    /// ferryd of 5,000 stores with a dozen keys each about 3 MiB.
    static let maxFileBytes = 16 << 20
    /// Problems listed at most; the rest are counted.
    static let maxProblems = 100

    static let globalKeys: Set<String> = ConfigurationValueReader.sessionKeys.union([
        "database", "max-concurrent-passes", "log-level", "keep-changes", "stuck-pass-timeout",
        "backoff-initial", "backoff-max", "backoff-permanent", "metrics-listen", "notify-listen", "notify-public-url",
    ]).union(HeartbeatConfiguration.keys)

    private static func readGlobal(
        _ entries: [ConfigurationSyntax.Entry],
        reader: inout ConfigurationValueReader,
        environment: [String: String],
        baseDirectory: String,
        secrets: SecretHandling
    ) -> GlobalConfiguration {
        var global = GlobalConfiguration(
            databasePath: GlobalConfiguration.defaultDatabasePath(environment: environment),
            runtimeDirectory: GlobalConfiguration.defaultRuntimeDirectory(environment: environment)
        )
        for entry in entries {
            if reader.applySessionKey(entry, to: &global.session, baseDirectory: baseDirectory) {
                continue
            }
            switch entry.key {
            case "database":
                guard !entry.value.isEmpty else {
                    reader.problem(entry, "needs a path (or remove the line for the default)")
                    continue
                }
                global.databasePath = ConfigurationValueReader.absolute(entry.value, against: baseDirectory)
                global.databaseIsDefault = false
            case "max-concurrent-passes":
                if let value = reader.integer(entry, in: 1...64) { global.maxConcurrentPasses = value }
            case "log-level":
                if let level = Logger.Level(rawValue: entry.value) {
                    global.logLevel = level
                } else {
                    reader.problem(entry, "expected one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")), got '\(entry.value)'")
                }
            case "keep-changes":
                if let value = reader.duration(entry) { global.changeRetention = value }
            case "stuck-pass-timeout":
                if let value = reader.duration(entry) { global.stuckPassTimeout = value }
            case "backoff-initial", "backoff-max", "backoff-permanent":
                guard let value = reader.duration(entry) else { continue }
                switch entry.key {
                case "backoff-initial": global.backoff.base = value
                case "backoff-max": global.backoff.cap = value
                default: global.backoff.permanentFailureDelay = value
                }
            case "metrics-listen":
                switch MetricsEndpoint.parse(entry.value) {
                case .success(let endpoint): global.metricsListen = endpoint
                case .failure(let failure): reader.problem(entry, failure.description)
                }
            case "notify-listen":
                switch MetricsEndpoint.parse(entry.value) {
                case .success(let endpoint): global.notifyListen = endpoint
                case .failure(let failure): reader.problem(entry, failure.description)
                }
            case "notify-public-url":
                guard let url = URL(string: entry.value), url.scheme == "https" || url.scheme == "http", url.host != nil,
                      url.query == nil, url.fragment == nil else {
                    reader.problem(entry, "expected the https URL the APIs call, without the store's name, e.g. https://sync.example.com/ferry/notify")
                    continue
                }
                global.notifyPublicURL = entry.value
            case "heartbeat-url", "heartbeat-interval":
                continue  // read together below
            default:
                if let near = Suggestion.closest(to: entry.key, in: globalKeys) {
                    reader.problem(entry, "unknown key in [ferry] (did you mean \(near)?)")
                } else {
                    reader.problem(entry, "unknown key in [ferry] (known: \(globalKeys.sorted().joined(separator: ", ")))")
                }
            }
        }
        global.heartbeat = reader.heartbeat(url: entries.last { $0.key == "heartbeat-url" },
                                            interval: entries.last { $0.key == "heartbeat-interval" },
                                            secrets: SecretResolver(environment: environment, baseDirectory: baseDirectory, handling: secrets))
        if global.backoff.base > global.backoff.cap,
           let line = entries.last(where: { $0.key == "backoff-initial" }) ?? entries.last(where: { $0.key == "backoff-max" }) {
            reader.problem(line, "backoff-initial (\(ConfigurationUnits.format(global.backoff.base))) is more than backoff-max (\(ConfigurationUnits.format(global.backoff.cap)))")
        }
        return global
    }
}
