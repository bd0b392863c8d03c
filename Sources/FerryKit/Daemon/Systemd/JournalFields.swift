import Logging

/// Builds the journald fields of one log call: a pure function, so the mapping is testable
/// without a journald.
///
/// Fields: `MESSAGE`, `PRIORITY` (syslog level), `SYSLOG_IDENTIFIER`, `CODE_FILE`, `CODE_LINE`,
/// `CODE_FUNC`, and one field per metadata key: `message_id` becomes `MESSAGE_ID`, any other
/// key `x` becomes `FERRY_X` (uppercased; characters journald does not allow become `_`), so
/// `store` → `FERRY_STORE`, `pass` → `FERRY_PASS`, `duration_ms` → `FERRY_DURATION_MS`.
public enum JournalFields {
    /// syslog priority of a swift-log level (sd-daemon(3), syslog(3)).
    public static func priority(of level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    /// The journald field name for a metadata key.
    public static func fieldName(forMetadataKey key: String) -> String {
        if key == MessageID.metadataKey { return "MESSAGE_ID" }
        // journald: [A-Z0-9_], not starting with '_' (trusted fields) or a digit, at most 64 chars.
        // The FERRY_ prefix takes care of the first character.
        let mapped = key.uppercased().unicodeScalars.map { scalar -> Character in
            let c = Character(scalar)
            return (c >= "A" && c <= "Z") || (c >= "0" && c <= "9") ? c : "_"
        }
        return String(("FERRY_" + String(mapped)).prefix(64))
    }

    /// The text of a metadata value: strings as they are, lists and dictionaries as swift-log prints them.
    public static func text(of value: Logger.MetadataValue) -> String {
        switch value {
        case .string(let string): string
        case .stringConvertible(let convertible): convertible.description
        default: value.description
        }
    }

    /// `KEY=value` strings for `sd_journal_sendv`, in a stable order (fixed fields, then metadata
    /// sorted by field name).
    public static func make(
        level: Logger.Level,
        message: String,
        metadata: Logger.Metadata,
        identifier: String,
        file: String,
        function: String,
        line: UInt
    ) -> [String] {
        var fields = [
            "MESSAGE=\(message)",
            "PRIORITY=\(priority(of: level))",
            "SYSLOG_IDENTIFIER=\(identifier)",
            "CODE_FILE=\(file)",
            "CODE_LINE=\(line)",
            "CODE_FUNC=\(function)",
        ]
        var byField: [String: String] = [:]
        for (key, value) in metadata {
            byField[fieldName(forMetadataKey: key)] = text(of: value)
        }
        for name in byField.keys.sorted() {
            fields.append("\(name)=\(byField[name]!)")
        }
        return fields
    }
}
