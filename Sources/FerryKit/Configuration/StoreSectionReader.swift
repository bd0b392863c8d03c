import Foundation

/// Validates one `[store NAME]` section into a ``StoreConfiguration``.
///
/// `kind` is read first, because it decides which further keys are known
/// (``StoreKind/optionKeys`` and ``StoreKind/secretKeys``).
struct StoreSectionReader {
    let baseDirectory: String
    let secrets: SecretResolver
    let defaults: SessionConfiguration
    var values: ConfigurationValueReader

    init(file: String, baseDirectory: String, environment: [String: String], defaults: SessionConfiguration) {
        self.baseDirectory = baseDirectory
        self.secrets = SecretResolver(environment: environment, baseDirectory: baseDirectory)
        self.defaults = defaults
        self.values = ConfigurationValueReader(file: file)
    }

    static let commonKeys: Set<String> = ConfigurationValueReader.sessionKeys.union([
        "kind", "url", "interval", "jitter", "priority", "page-size", "deletion", "reconcile-interval",
        "max-delete-share", "on-bad-record", "max-record-size", "username",
    ])

    /// Why `name` cannot name a store (it becomes a table name), or nil when it can.
    static func problem(withName name: String) -> String? {
        let valid = name.count <= 63
            && name.first.map { $0 >= "a" && $0 <= "z" } == true
            && name.allSatisfy { ($0 >= "a" && $0 <= "z") || ($0 >= "0" && $0 <= "9") || $0 == "_" }
        guard valid else {
            return "invalid store name '\(name)': use lowercase letters, digits and '_', starting with a letter, at most 63 characters"
        }
        if name.hasPrefix("ferry_") || name.hasPrefix("sqlite_") {
            return "invalid store name '\(name)': names starting with ferry_ or sqlite_ are reserved"
        }
        return nil
    }

    mutating func read(name: String, section: ConfigurationSyntax.Section) -> StoreConfiguration? {
        let entries = values.unique(section.entries)
        let location = ConfigurationLocation(file: values.file, line: section.line)
        var kind: StoreKind?
        var url: String?
        var kindIsValid = true
        if let entry = entries.first(where: { $0.key == "kind" }) {
            kind = StoreKind(rawValue: entry.value)
            if kind == nil {
                kindIsValid = false
                values.problem(entry, "expected one of \(StoreKind.allCases.map(\.rawValue).joined(separator: ", ")), got '\(entry.value)'")
            }
        } else {
            kindIsValid = false
            values.problems.append(.init(file: values.file, line: section.line, key: "kind",
                                         message: "store '\(name)' needs kind = parse, json, carddav or caldav"))
        }
        if let entry = entries.first(where: { $0.key == "url" }) {
            url = readURL(entry, kind: kind)
        } else {
            values.problems.append(.init(file: values.file, line: section.line, key: "url",
                                         message: "store '\(name)' needs a url"))
        }

        var store = StoreConfiguration(name: name, kind: kind ?? .json, url: url ?? "", location: location)
        store.session = defaults
        for entry in entries where entry.key != "kind" && entry.key != "url" {
            apply(entry, to: &store, kind: kindIsValid ? kind : nil)
        }
        if kind == .json, let url, url.hasPrefix("file:") {
            store.session.allowedProtocols.insert("file")
        }
        guard kindIsValid, url != nil else { return nil }
        return store
    }

    private mutating func apply(_ entry: ConfigurationSyntax.Entry, to store: inout StoreConfiguration, kind: StoreKind?) {
        if values.applySessionKey(entry, to: &store.session, baseDirectory: baseDirectory) {
            return
        }
        switch entry.key {
        case "interval":
            if let value = values.duration(entry) { store.interval = value }
        case "jitter":
            if let value = values.duration(entry, allowZero: true) { store.jitter = value }
        case "priority":
            switch entry.value {
            case "high": store.priority = .high
            case "normal": store.priority = .normal
            case "low": store.priority = .low
            default: values.problem(entry, "expected one of high, normal, low, got '\(entry.value)'")
            }
        case "page-size":
            if let value = values.integer(entry, in: 1...100_000) { store.pageSize = value }
        case "deletion":
            if let value = values.choice(entry, DeletionPolicy.self, allowed: [.hard, .tombstone]) { store.deletion = value }
        case "reconcile-interval":
            if entry.value == "never" {
                store.reconcileInterval = nil
            } else if let value = values.duration(entry) {
                store.reconcileInterval = value
            }
        case "max-delete-share":
            if let value = ConfigurationUnits.share(entry.value) {
                store.maxDeleteShare = value
            } else {
                values.problem(entry, "expected a share like 50% or 0.5 (0% to 100%), got '\(entry.value)'")
            }
        case "on-bad-record":
            if let value = values.choice(entry, BadRecordPolicy.self, allowed: [.skip, .fail]) { store.badRecordPolicy = value }
        case "max-record-size":
            if let value = values.size(entry) {
                store.maxRecordBytes = Int(clamping: value)
            }
        case "username":
            guard !entry.value.isEmpty else {
                values.problem(entry, "needs a value (or remove the line)")
                return
            }
            store.username = entry.value
        case let key where key.hasPrefix("column."):
            if let column = readColumn(entry, name: String(key.dropFirst("column.".count))) {
                store.columns.append(column)
            }
        case let key where kind?.secretKeys.contains(key) == true:
            switch secrets.resolve(entry.value) {
            case .success(let secret): store.secrets[key] = secret
            case .failure(let problem): values.problem(entry, problem.message)
            }
        case let key where kind?.optionKeys.contains(key) == true || (kind == .json && key.hasPrefix("header.") && key.count > 7):
            store.options[key] = ConfigurationValue(entry.value, at: ConfigurationLocation(file: values.file, line: entry.line))
        default:
            if let kind {
                let known = Self.commonKeys.union(kind.optionKeys).union(kind.secretKeys).union(["column.NAME"])
                values.problem(entry, "unknown key for a \(kind.rawValue) store (known: \(known.sorted().joined(separator: ", ")))")
            } else if !StoreKind.allCases.contains(where: { $0.optionKeys.contains(entry.key) || $0.secretKeys.contains(entry.key) }) {
                values.problem(entry, "unknown key")
            }
            // A key some kind knows, in a store whose kind is missing or wrong: the kind problem says it all.
        }
    }

    /// `column.NAME = TYPE PATH [unindexed]`.
    private mutating func readColumn(_ entry: ConfigurationSyntax.Entry, name: String) -> TypedColumn? {
        guard Self.isIdentifier(name) else {
            values.problem(entry, "column name '\(name)' must be lowercase letters, digits and '_', starting with a letter")
            return nil
        }
        let words = entry.value.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        guard words.count == 2 || (words.count == 3 && words[2] == "unindexed") else {
            values.problem(entry, "expected 'TYPE PATH' or 'TYPE PATH unindexed', e.g. text $.email")
            return nil
        }
        guard let type = TypedColumn.ColumnType(rawValue: words[0]) else {
            values.problem(entry, "column type must be text, integer or real, got '\(words[0])'")
            return nil
        }
        guard words[1].hasPrefix("$") else {
            values.problem(entry, "column path must be a JSON path starting with '$', e.g. $.email")
            return nil
        }
        return TypedColumn(name: name, type: type, path: words[1], indexed: words.count == 2)
    }

    private static func isIdentifier(_ name: String) -> Bool {
        name.count <= 63 && name.first.map { $0 >= "a" && $0 <= "z" } == true
            && name.allSatisfy { ($0 >= "a" && $0 <= "z") || ($0 >= "0" && $0 <= "9") || $0 == "_" }
    }

    /// An http(s) URL with a host, or for json stores a file: URL made absolute.
    private mutating func readURL(_ entry: ConfigurationSyntax.Entry, kind: StoreKind?) -> String? {
        let text = entry.value
        if text.lowercased().hasPrefix("file:") {
            guard kind == .json || kind == nil else {
                values.problem(entry, "file: URLs are only allowed for kind = json")
                return nil
            }
            var path = String(text.dropFirst("file:".count))
            if path.hasPrefix("//") {
                // file:///abs or file://localhost/abs; any other host is not a local file.
                let afterSlashes = path.dropFirst(2)
                let host = afterSlashes.prefix { $0 != "/" }
                guard host.isEmpty || host == "localhost" else {
                    values.problem(entry, "file:// URL names host '\(host)'; write file:///absolute/path or file:relative/path")
                    return nil
                }
                path = String(afterSlashes.dropFirst(host.count))
            }
            path = path.removingPercentEncoding ?? path
            guard !path.isEmpty else {
                values.problem(entry, "file: URL needs a path")
                return nil
            }
            // Relative to the configuration file, so the bundled demo works from any checkout.
            let absolute = ConfigurationValueReader.absolute(path, against: baseDirectory)
            return URL(fileURLWithPath: absolute).absoluteString
        }
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased() else {
            values.problem(entry, "not a valid URL: '\(text)'")
            return nil
        }
        guard scheme == "http" || scheme == "https" else {
            values.problem(entry, "URL scheme must be http or https (file: only for kind = json), got '\(scheme)'")
            return nil
        }
        guard let host = components.host, !host.isEmpty else {
            values.problem(entry, "URL needs a host: '\(text)'")
            return nil
        }
        guard components.user == nil, components.password == nil else {
            // Never echo it: the user-info part may hold a password.
            values.problem(entry, "credentials in the URL are refused; use username = and a password secret reference")
            return nil
        }
        return text
    }
}
