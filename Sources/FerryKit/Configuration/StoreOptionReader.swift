import Foundation

/// What a kind reads its ``StoreOptions`` from: the section's entries for the kind's own keys,
/// their secrets (already resolved), the store's name and URL, and where to report problems.
///
/// Every problem names the file, the line and the key (the section's line for a missing key),
/// exactly as the rest of the loader does, so `ferry check-config`, ferryd's start and its
/// reloads refuse the same files with the same words.
struct StoreOptionReader {
    /// The store's name.
    let store: String
    /// The store's URL, as validated by the section reader.
    let url: String
    /// The store's `[store NAME]` line.
    let section: ConfigurationLocation
    /// Resolved secrets, by key (only the kind's secret keys that resolved).
    let secrets: [String: Secret]
    private var entries: [String: ConfigurationSyntax.Entry]
    private(set) var values: ConfigurationValueReader
    /// Put before every key this reader reads (``prefixed(_:url:)``).
    private var keyPrefix = ""

    init(store: String, url: String, section: ConfigurationLocation, entries: [ConfigurationSyntax.Entry],
         secrets: [String: Secret], values: ConfigurationValueReader) {
        self.store = store
        self.url = url
        self.section = section
        self.secrets = secrets
        self.entries = Dictionary(entries.map { (Self.canonical($0.key), $0) }, uniquingKeysWith: { first, _ in first })
        self.values = values
    }

    /// Other spellings of a key, read as the documented one (Parse stores took `lookback`, JSON
    /// stores `look-back`, for one setting); problems still name the key as written.
    static let aliases = ["lookback": "look-back"]

    /// `key` with an alias in its last part replaced by the documented spelling.
    static func canonical(_ key: String) -> String {
        let parts = key.split(separator: ".", omittingEmptySubsequences: false)
        guard let last = parts.last, let documented = aliases[String(last)] else { return key }
        return (parts.dropLast().map(String.init) + [documented]).joined(separator: ".")
    }

    /// A reader of the keys under `prefix` (`changes.url` read as `url`), for a part of the
    /// section that takes a kind's keys again (a JSON store's feed); its URL is `url`. Its
    /// problems name the keys as written. It reads no secrets.
    func prefixed(_ prefix: String, url: String) -> StoreOptionReader {
        var reader = StoreOptionReader(store: store, url: url, section: section, entries: [], secrets: [:], values: values)
        reader.entries = entries
        reader.keyPrefix = keyPrefix + prefix
        return reader
    }

    /// Takes back the problems a ``prefixed(_:url:)`` reader found.
    mutating func adopt(problemsOf reader: StoreOptionReader) {
        values = reader.values
    }

    /// The raw value of `key`, if the section sets it.
    func text(_ key: String) -> String? { entries[keyPrefix + key]?.value }

    /// Where `key` is set, or the section's line when it is not.
    func location(of key: String) -> ConfigurationLocation {
        entries[keyPrefix + key].map { ConfigurationLocation(file: values.file, line: $0.line) } ?? section
    }

    /// Records a problem about `key`, at its line (or the section's when it is not set).
    mutating func problem(_ key: String, _ message: String) {
        if let entry = entries[keyPrefix + key] {
            values.problem(entry, message)
        } else {
            values.problems.append(.init(file: values.file, line: section.line, key: keyPrefix + key, message: message))
        }
    }

    /// A non-empty value of `key`; a problem saying what it is for when missing or empty.
    mutating func required(_ key: String, _ purpose: String) -> String? {
        guard let value = text(key) else {
            problem(key, "store '\(store)' needs \(keyPrefix + key) (\(purpose))")
            return nil
        }
        guard !value.isEmpty else {
            problem(key, "needs a value (\(purpose))")
            return nil
        }
        return value
    }

    /// The value of `key` when set and non-empty; an empty value is the default.
    func optional(_ key: String) -> String? {
        text(key).flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The duration `key` sets, `value` when it is not set; nil (with a problem) when invalid.
    mutating func duration(_ key: String, default value: Duration, allowZero: Bool = false, atMost limit: Duration? = nil) -> Duration? {
        guard let entry = entries[keyPrefix + key] else { return value }
        guard let parsed = values.duration(entry, allowZero: allowZero) else { return nil }
        if let limit, parsed > limit {
            values.problem(entry, "must be at most \(ConfigurationUnits.format(limit)), got '\(entry.value)'")
            return nil
        }
        return parsed
    }

    /// The whole number `key` sets, `value` when it is not set; nil (with a problem) when invalid.
    mutating func integer(_ key: String, default value: Int, in range: ClosedRange<Int>) -> Int? {
        guard let entry = entries[keyPrefix + key] else { return value }
        return values.integer(entry, in: range)
    }

    func secret(_ key: String) -> Secret? { keyPrefix.isEmpty ? secrets[key] : nil }

    /// Basic authentication from `username =` and the `password` secret: both or neither
    /// (`.none`). Nil, with a problem, when only one of them is set.
    mutating func basicAuthentication() -> HTTPAuthentication? {
        let username = text("username")
        if let username, username.isEmpty {
            problem("username", "needs a value (or remove the line)")
            return nil
        }
        switch (username, secret("password")) {
        case (nil, nil):
            // A password whose reference did not resolve has its problem already.
            return text("password") == nil ? HTTPAuthentication.none : nil
        case let (username?, password?):
            return .basic(username: username, password: password)
        case (_?, nil):
            if text("password") == nil { problem("username", "store '\(store)' has a username but no password (password = credential:NAME)") }
            return nil
        case (nil, _?):
            problem("password", "a password needs username = NAME beside it")
            return nil
        }
    }
}
