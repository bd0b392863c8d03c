/// One thing wrong with a configuration file, located by file, line and key.
///
/// Its ``description`` is what `ferry check-config` prints and what ferryd puts into the
/// journal and STATUS when a reload is refused:
///
///     /etc/ferry/ferry.conf:12: key 'interval': expected a duration like 30s, 5m, 2h, 1d or 250ms
///
/// A problem never contains a secret's value: messages about secret keys name only the
/// reference (`credential:NAME`, `file:/path`), never what it points to or an inline literal.
public struct ConfigurationProblem: Sendable, Equatable, CustomStringConvertible {
    public var file: String
    /// 1-based line; 0 when the problem concerns the whole file (it cannot be read).
    public var line: Int
    /// The key the problem is about; nil for section headers and syntax errors.
    public var key: String?
    public var message: String

    public init(file: String, line: Int, key: String? = nil, message: String) {
        self.file = file
        self.line = line
        self.key = key
        self.message = message
    }

    public var location: ConfigurationLocation { ConfigurationLocation(file: file, line: line) }

    public var description: String {
        let place = line > 0 ? "\(file):\(line)" : file
        if let key {
            return "\(place): key '\(key)': \(message)"
        }
        return "\(place): \(message)"
    }
}
