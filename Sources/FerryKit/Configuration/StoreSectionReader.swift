import Foundation

/// Validates one `[store NAME]` section into a ``StoreConfiguration``.
///
/// `kind` is read first, because it decides which further keys are known; the keys every
/// store takes are read here, and the kind's own keys by the kind (``StoreKind``), into its
/// ``StoreOptions``.
struct StoreSectionReader {
    let baseDirectory: String
    let secrets: SecretResolver
    let defaults: SessionConfiguration
    var values: ConfigurationValueReader

    init(file: String, baseDirectory: String, environment: [String: String], defaults: SessionConfiguration,
         secretHandling: SecretHandling = .resolve) {
        self.baseDirectory = baseDirectory
        self.secrets = SecretResolver(environment: environment, baseDirectory: baseDirectory, handling: secretHandling)
        self.defaults = defaults
        self.values = ConfigurationValueReader(file: file)
    }

    static let commonKeys: Set<String> = ConfigurationValueReader.sessionKeys.union([
        "kind", "url", "interval", "jitter", "priority", "deletion", "reconcile-interval",
        "max-delete-share", "on-bad-record", "max-record-size", "push", "conflict",
    ]).union(HeartbeatConfiguration.keys).union(OAuth2Grant.keys).union(NotificationConfiguration.keys)

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

    /// What the common keys set, before the kind's options exist.
    private struct Common {
        var interval: Duration = .seconds(300)
        var jitter: Duration = .seconds(30)
        var priority: StorePriority = .normal
        var deletion: DeletionPolicy = .hard
        var reconcileInterval: Duration? = .seconds(3600)
        var maxDeleteShare = 0.5
        var badRecordPolicy: BadRecordPolicy = .skip
        var maxRecordBytes = 1 << 20
        var columns: [TypedColumn] = []
        var childTables: [ChildTable] = []
        /// `table.NAME.COLUMN` entries, placed once every `table.NAME` is read.
        var childColumns: [(table: String, entry: ConfigurationSyntax.Entry, column: String)] = []
        var headers = ConfiguredHeaders()
        var query = ConfiguredQuery()
        var session: SessionConfiguration
        var heartbeatURL: ConfigurationSyntax.Entry?
        var heartbeatInterval: ConfigurationSyntax.Entry?
        var writeBack = WriteBackConfiguration()
        var push: ConfigurationSyntax.Entry?
        var conflict: ConfigurationSyntax.Entry?
        var oauth2: [ConfigurationSyntax.Entry] = []
        var notify: [ConfigurationSyntax.Entry] = []
    }

    mutating func read(name: String, section: ConfigurationSyntax.Section) -> StoreConfiguration? {
        let entries = values.unique(section.entries)
        let location = ConfigurationLocation(file: values.file, line: section.line)
        let names = StoreKind.registered.map(\.name).joinedAsList(conjunction: "or")
        var kind: StoreKind?
        var kindIsValid = true
        if let entry = entries.first(where: { $0.key == "kind" }) {
            kind = StoreKind(rawValue: entry.value)
            if kind == nil {
                kindIsValid = false
                values.problem(entry, "expected one of \(names), got '\(entry.value)'"
                               + Suggestion.hint(for: entry.value, in: StoreKind.registered.map(\.name)))
            }
        } else {
            kindIsValid = false
            values.problems.append(.init(file: values.file, line: section.line, key: "kind",
                                         message: "store '\(name)' needs kind = \(names)"))
        }
        var url: String?
        if let entry = entries.first(where: { $0.key == "url" }) {
            url = readURL(entry, kind: kind)
        } else {
            values.problems.append(.init(file: values.file, line: section.line, key: "url",
                                         message: "store '\(name)' needs a url"))
        }

        var common = Common(session: defaults)
        var kindEntries: [ConfigurationSyntax.Entry] = []
        var resolved: [String: Secret] = [:]
        for entry in entries where entry.key != "kind" && entry.key != "url" {
            if values.applySessionKey(entry, to: &common.session, baseDirectory: baseDirectory) || apply(entry, to: &common) {
                continue
            }
            guard let kind else {
                // A key some kind knows, in a store whose kind is missing or wrong: the kind problem says it all.
                if !StoreKind.registered.contains(where: { $0.knows(entry.key) }) {
                    let known = Self.commonKeys.union(StoreKind.registered.flatMap { $0.optionKeys.union($0.secretKeys) })
                    values.problem(entry, "unknown key" + Suggestion.hint(for: entry.key, in: known))
                }
                continue
            }
            if kind.secretKeys.contains(entry.key) {
                kindEntries.append(entry)
                switch secrets.resolve(entry.value) {
                case .success(let secret): resolved[entry.key] = secret
                case .failure(let problem): values.problem(entry, problem.message)
                }
            } else if kind.optionKeys.contains(entry.key) {
                kindEntries.append(entry)
            } else {
                values.problem(entry, Self.unknownKeyMessage(entry.key, for: kind))
            }
        }
        let heartbeat = values.heartbeat(url: common.heartbeatURL, interval: common.heartbeatInterval, secrets: secrets)
        let oauth2 = values.oauth2Grant(common.oauth2, store: name, section: location, secrets: secrets)
        let notify = readNotification(common.notify, section: location)
        guard kindIsValid, let kind, let url, common.oauth2.isEmpty || oauth2 != nil else { return nil }
        if oauth2 != nil, let entry = kindEntries.first(where: { Self.authorizationKeys.contains($0.key) }) {
            values.problem(entry, "the store gets OAuth2 access tokens (oauth2-* keys), which go in the Authorization header \(entry.key) would set; keep one of them")
            return nil
        }
        if let entry = common.push, common.writeBack.push, !kind.pushes {
            let pushing = StoreKind.registered.filter(\.pushes).map(\.name).joinedAsList(conjunction: "and")
            values.problem(entry, "\(kind.name) stores cannot push local writes (\(pushing) stores can); remove push or set push = no")
            return nil
        }
        if let entry = common.conflict, common.push == nil || !common.writeBack.push {
            values.problem(entry, "conflict = \(entry.value) has no effect without push = yes")
        }
        if url.hasPrefix("file:") {
            common.session.allowedProtocols.insert("file")
        }
        placeChildColumns(&common)
        if let table = common.childTables.first, kind.localBody != .jsonObject {
            values.problems.append(.init(file: values.file, line: section.line, key: "table.\(table.name)",
                                         message: "child tables read a JSON record's arrays; \(kind.name) records are not JSON objects"))
            return nil
        }
        var reader = StoreOptionReader(store: name, url: url, section: location, entries: kindEntries, secrets: resolved, values: values)
        let options = kind.readOptions(&reader)
        values = reader.values
        guard let options else { return nil }
        if let entry = common.push, common.writeBack.push, let problem = options.pushProblem {
            values.problem(entry, problem)
            return nil
        }
        var store = StoreConfiguration(name: name, url: url, options: options, location: location)
        store.interval = common.interval
        store.jitter = common.jitter
        store.priority = common.priority
        store.deletion = common.deletion
        store.reconcileInterval = common.reconcileInterval
        store.maxDeleteShare = common.maxDeleteShare
        store.badRecordPolicy = common.badRecordPolicy
        store.maxRecordBytes = common.maxRecordBytes
        store.columns = common.columns
        store.childTables = common.childTables
        store.headers = common.headers
        store.query = common.query
        store.session = common.session
        store.heartbeat = heartbeat
        store.writeBack = common.writeBack
        store.oauth2 = oauth2
        store.notify = notify
        return store
    }

    /// Kinds' keys that set the `Authorization` header, which OAuth2 sets instead.
    static let authorizationKeys: Set<String> = ["username", "password", "bearer-token"]

    /// Why `key` is refused in a store of `kind`: another kind's key, or no key at all.
    static func unknownKeyMessage(_ key: String, for kind: StoreKind) -> String {
        let owners = StoreKind.registered.filter { $0.knows(key) }.map(\.name)
        if !owners.isEmpty {
            return "not a key of \(kind.name) stores (it is one of \(owners.joinedAsList(conjunction: "and")) stores)"
        }
        let own = kind.optionKeys.union(kind.secretKeys)
        if let near = Suggestion.closest(to: key, in: own.union(commonKeys)) { return "unknown key (did you mean \(near)?)" }
        return "unknown key; a \(kind.name) store takes \(own.sorted().joined(separator: ", ")), the keys every store takes, column.NAME and header.NAME"
    }

    /// Applies a key every store takes; false when `entry` is not one.
    private mutating func apply(_ entry: ConfigurationSyntax.Entry, to common: inout Common) -> Bool {
        switch entry.key {
        case "interval":
            if let value = values.duration(entry) { common.interval = value }
        case "heartbeat-url":
            common.heartbeatURL = entry
        case "heartbeat-interval":
            common.heartbeatInterval = entry
        case "push":
            common.push = entry
            switch entry.value {
            case "yes", "true", "on": common.writeBack.push = true
            case "no", "false", "off": common.writeBack.push = false
            default: values.problem(entry, "expected yes or no, got '\(entry.value)'")
            }
        case "conflict":
            common.conflict = entry
            if let value = values.choice(entry, ConflictPolicy.self, allowed: ConflictPolicy.allCases) { common.writeBack.conflict = value }
        case "jitter":
            if let value = values.duration(entry, allowZero: true) { common.jitter = value }
        case "priority":
            switch entry.value {
            case "high": common.priority = .high
            case "normal": common.priority = .normal
            case "low": common.priority = .low
            default: values.problem(entry, "expected one of high, normal, low, got '\(entry.value)'")
            }
        case "deletion":
            if let value = values.choice(entry, DeletionPolicy.self, allowed: [.hard, .tombstone]) { common.deletion = value }
        case "reconcile-interval":
            if entry.value == "never" {
                common.reconcileInterval = nil
            } else if let value = values.duration(entry) {
                common.reconcileInterval = value
            }
        case "max-delete-share":
            if let value = ConfigurationUnits.share(entry.value) {
                common.maxDeleteShare = value
            } else {
                values.problem(entry, "expected a share like 50% or 0.5 (0% to 100%), got '\(entry.value)'")
            }
        case "on-bad-record":
            if let value = values.choice(entry, BadRecordPolicy.self, allowed: [.skip, .fail]) { common.badRecordPolicy = value }
        case "max-record-size":
            if let value = values.size(entry) {
                common.maxRecordBytes = Int(clamping: value)
            }
        case let key where key.hasPrefix("column."):
            if let column = readColumn(entry, name: String(key.dropFirst("column.".count))) {
                if common.columns.contains(where: { $0.name == column.name }) {
                    values.problem(entry, "column \(column.name) is defined twice")
                } else {
                    common.columns.append(column)
                }
            }
        case let key where key.hasPrefix("table."):
            let rest = key.dropFirst("table.".count).split(separator: ".", maxSplits: 1).map(String.init)
            guard let table = rest.first, Self.isIdentifier(table) else {
                values.problem(entry, "a child table's name must be lowercase letters, digits and '_', starting with a letter, as in table.lines = $.lines[*]")
                return true
            }
            if rest.count == 2 {
                common.childColumns.append((table, entry, rest[1]))
            } else if common.childTables.contains(where: { $0.name == table }) {
                values.problem(entry, "table \(table) is defined twice")
            } else if let path = readChildPath(entry) {
                common.childTables.append(ChildTable(name: table, path: path))
            }
        case let key where key.hasPrefix("header."):
            if let field = readHeader(entry, name: String(key.dropFirst("header.".count))) {
                common.headers.fields.append(field)
            }
        case let key where OAuth2Grant.keys.contains(key):
            common.oauth2.append(entry)
        case let key where NotificationConfiguration.keys.contains(key):
            common.notify.append(entry)
        case let key where key.hasPrefix("query."):
            if let field = readQueryItem(entry, name: String(key.dropFirst("query.".count))) {
                common.query.items.append(field)
            }
        default:
            return false
        }
        return true
    }

    /// `header.NAME = VALUE`: plain text, or a secret reference for a credential.
    private mutating func readHeader(_ entry: ConfigurationSyntax.Entry, name: String) -> ConfiguredField? {
        guard ConfiguredHeaders.isFieldName(name) else {
            values.problem(entry, "'\(name)' is not an HTTP header name")
            return nil
        }
        guard !ConfiguredHeaders.reserved.contains(name.lowercased()) else {
            values.problem(entry, "\(name) is set by Ferry for each request and cannot be configured")
            return nil
        }
        return readField(entry, name: name)
    }

    /// `query.NAME = VALUE`: a parameter on every request URL; a secret only by reference.
    private mutating func readQueryItem(_ entry: ConfigurationSyntax.Entry, name: String) -> ConfiguredField? {
        guard !name.isEmpty, !name.contains(where: { $0 == "&" || $0 == "=" || $0 == "#" || $0 == " " }) else {
            values.problem(entry, "'\(name)' is not a query parameter name")
            return nil
        }
        return readField(entry, name: name)
    }

    /// A configured header or parameter value: a secret reference, or plain text unless the
    /// name says it is a credential.
    private mutating func readField(_ entry: ConfigurationSyntax.Entry, name: String) -> ConfiguredField? {
        if entry.value.hasPrefix("credential:") || entry.value.hasPrefix("file:") {
            switch secrets.resolve(entry.value) {
            case .success(let secret): return .init(name: name, value: .secret(secret))
            case .failure(let problem):
                values.problem(entry, problem.message)
                return nil
            }
        }
        if ConfiguredField.looksLikeCredential(name) {
            // Never echo the value: it is probably the secret itself.
            values.problem(entry, "\(name) carries a credential: write credential:NAME (systemd LoadCredential=) or file:/path/to/secret, not the value")
            return nil
        }
        return .init(name: name, value: .text(entry.value))
    }

    /// `table.NAME = PATH`: a JSON path to an array, `[*]` at its end allowed.
    private mutating func readChildPath(_ entry: ConfigurationSyntax.Entry) -> String? {
        var path = entry.value.trimmingCharacters(in: .whitespaces)
        if path.hasSuffix("[*]") { path.removeLast(3) }
        guard path.hasPrefix("$"), Self.isJSONPath(path) else {
            values.problem(entry, "'\(entry.value)' is not a JSON path to an array, as in $.lines.data[*] or $.labels")
            return nil
        }
        return path
    }

    /// The `table.NAME.COLUMN` entries as typed columns of their child tables.
    private mutating func placeChildColumns(_ common: inout Common) {
        for (table, entry, name) in common.childColumns {
            guard let index = common.childTables.firstIndex(where: { $0.name == table }) else {
                values.problem(entry, "no table.\(table) = PATH for this column")
                continue
            }
            guard !ChildTable.baseColumns.contains(name) else {
                values.problem(entry, "column \(name) would replace a column every child table has (\(ChildTable.baseColumns.sorted().joined(separator: ", "))); choose another name")
                continue
            }
            guard let column = readColumn(entry, name: name, reserved: []) else { continue }
            if common.childTables[index].columns.contains(where: { $0.name == name }) {
                values.problem(entry, "column \(name) of table \(table) is defined twice")
            } else {
                common.childTables[index].columns.append(column)
            }
        }
    }

    /// `column.NAME = TYPE PATH [unindexed]`.
    private mutating func readColumn(_ entry: ConfigurationSyntax.Entry, name: String, reserved: Set<String> = ReplicaDatabase.baseColumns) -> TypedColumn? {
        guard Self.isIdentifier(name) else {
            values.problem(entry, "column name '\(name)' must be lowercase letters, digits and '_', starting with a letter")
            return nil
        }
        guard !reserved.contains(name), !name.hasPrefix("ferry_") else {
            values.problem(entry, "column \(name) would replace a column every store table has (\(ReplicaDatabase.baseColumns.sorted().joined(separator: ", "))); choose another name")
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
        guard Self.isJSONPath(words[1]) else {
            values.problem(entry, "'\(words[1])' is not a JSON path SQLite can read: write $.field, $.a.b, $.list[0] or $.\"odd key\"")
            return nil
        }
        return TypedColumn(name: name, type: type, path: words[1], indexed: words.count == 2)
    }

    /// A path SQLite's JSON functions accept: `$`, then `.key`, `."quoted key"`, `[N]` or
    /// `[#-N]` steps (an empty key, as in `$..x`, is refused by SQLite at query time).
    static func isJSONPath(_ path: String) -> Bool {
        var rest = Substring(path)
        guard rest.first == "$" else { return false }
        rest = rest.dropFirst()
        while let first = rest.first {
            switch first {
            case ".":
                rest = rest.dropFirst()
                if rest.first == "\"" {
                    guard let close = rest.dropFirst().firstIndex(of: "\"") else { return false }
                    guard close > rest.index(after: rest.startIndex) else { return false }
                    rest = rest[rest.index(after: close)...]
                } else {
                    let key = rest.prefix { $0 != "." && $0 != "[" }
                    guard !key.isEmpty, !key.contains(" ") else { return false }
                    rest = rest.dropFirst(key.count)
                }
            case "[":
                guard let close = rest.firstIndex(of: "]") else { return false }
                let index = rest[rest.index(after: rest.startIndex)..<close]
                let valid = index.allSatisfy(\.isNumber) && !index.isEmpty
                    || index == "#" || (index.hasPrefix("#-") && index.count > 2 && index.dropFirst(2).allSatisfy(\.isNumber))
                guard valid else { return false }
                rest = rest[rest.index(after: close)...]
            default:
                return false
            }
        }
        return true
    }

    private static func isIdentifier(_ name: String) -> Bool {
        name.count <= 63 && name.first.map { $0 >= "a" && $0 <= "z" } == true
            && name.allSatisfy { ($0 >= "a" && $0 <= "z") || ($0 >= "0" && $0 <= "9") || $0 == "_" }
    }

    /// An http(s) URL with a host, or (for kinds that allow it) a file: URL made absolute.
    private mutating func readURL(_ entry: ConfigurationSyntax.Entry, kind: StoreKind?) -> String? {
        let text = entry.value
        let fileKinds = StoreKind.registered.filter { $0.urlSchemes.contains("file") }.map { "kind = \($0.name)" }.joined(separator: " or ")
        if text.lowercased().hasPrefix("file:") {
            guard kind.map({ $0.urlSchemes.contains("file") }) ?? true else {
                values.problem(entry, "file: URLs are only allowed for \(fileKinds)")
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
        if text.lowercased().hasPrefix("mailto:") {
            // RFC 6764 §6: an e-mail address names the account's domain, whose well-known
            // URLs discovery starts from (over https; DNS SRV records are not looked up).
            guard kind.map({ $0.urlSchemes.contains("mailto") }) ?? true else {
                let mailKinds = StoreKind.registered.filter { $0.urlSchemes.contains("mailto") }.map { "kind = \($0.name)" }.joined(separator: " or ")
                values.problem(entry, "mailto: URLs are only allowed for \(mailKinds)")
                return nil
            }
            let address = text.dropFirst("mailto:".count)
            let domain = address.split(separator: "@", omittingEmptySubsequences: false).last.map(String.init) ?? ""
            guard address.contains("@"), !domain.isEmpty, URLComponents(string: "https://\(domain)/")?.host == domain else {
                values.problem(entry, "mailto: needs an address with a domain (mailto:alice@example.com), got '\(text)'")
                return nil
            }
            return "https://\(domain)/"
        }
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased() else {
            values.problem(entry, "not a valid URL: '\(text)'")
            return nil
        }
        guard scheme == "http" || scheme == "https" else {
            values.problem(entry, "URL scheme must be http or https (file: only for \(fileKinds)), got '\(scheme)'")
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
        if let secret = components.queryItems?.first(where: { ConfiguredField.looksLikeCredential($0.name) && !($0.value ?? "").isEmpty }) {
            // Never echo the value: it would end up in status, cursors and error lines.
            values.problem(entry, "the URL carries a credential in its query (\(secret.name)=...); remove it and write query.\(secret.name) = credential:NAME")
            return nil
        }
        return text
    }
}
