import Synchronization

/// Secrets Ferry comes to hold while it runs, not from its configuration: OAuth2 access tokens,
/// rotated refresh tokens, device codes. A server may quote one back (an error page echoing
/// the `Authorization` header, a next link carrying the token), so every error, log line and
/// stored text that configured secrets are redacted from is redacted from these too.
///
/// Process-wide and small: the newest few values are kept (a token superseded minutes ago can
/// still be quoted by an answer in flight), the oldest dropped.
public enum RuntimeSecrets {
    private static let kept = Mutex<[String]>([])
    /// How many values are kept; a store's access token and its one or two predecessors, for
    /// every grant a daemon holds, fit easily.
    static let capacity = 64

    /// Remembers `value` for redaction (an empty or very short value is not a secret anyone
    /// could find in text, and redacting it would mangle words).
    public static func remember(_ value: String) {
        guard value.utf8.count >= 8 else { return }
        kept.withLock { values in
            values.removeAll { $0 == value }
            values.append(value)
            if values.count > capacity { values.removeFirst(values.count - capacity) }
        }
    }

    /// Every value remembered, newest last.
    public static var values: [String] { kept.withLock { $0 } }
}

extension String {
    /// The text without `configured` secrets nor any runtime secret (``RuntimeSecrets``).
    func redactingSecrets(_ configured: [Secret]) -> String {
        redacting(configured.map(\.value) + RuntimeSecrets.values)
    }
}
