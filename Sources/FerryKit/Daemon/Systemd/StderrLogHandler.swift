import Foundation
import Logging

/// A swift-log handler writing one line per entry to a file descriptor (stderr by default):
///
///     <6>pass finished store=quotes pass=42 records=1000
///
/// The `<N>` prefix is the sd-daemon(3) priority, which systemd understands when our stderr
/// goes to a file or a pipe it reads; on a terminal the prefix is left out for people.
/// Metadata follows as `key=value`, sorted by key; values with spaces or quotes are quoted.
public struct StderrLogHandler: LogHandler {
    /// The shared level, until a level is set on this handler.
    private let setting: LogLevelSetting
    private var ownLevel: Logger.Level?

    public var logLevel: Logger.Level {
        get { ownLevel ?? setting.level }
        set { ownLevel = newValue }
    }
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private let fileDescriptor: Int32
    private let withPriorityPrefix: Bool
    /// Whether metadata follows the message; false for lines meant for people (`ferry sync`
    /// without `--verbose`), whose machine fields belong in `--json` and the journal.
    private let withMetadata: Bool
    /// Entries left out by their MESSAGE_ID: what the command reports itself (a failed pass,
    /// which `ferry sync` prints once as its error line).
    private let skipped: Set<String>
    /// Where lines go instead of the descriptor (above `ferry sync`'s progress bars).
    private let emit: (@Sendable (String) -> Void)?

    /// - Parameters:
    ///   - fileDescriptor: where lines go (2: stderr). The handler does not own or close it.
    ///   - priorityPrefix: whether lines start with `<N>`; nil: yes unless the descriptor is a terminal.
    ///   - metadata: whether `key=value` metadata follows each message.
    public init(level: Logger.Level = .info, fileDescriptor: Int32 = STDERR_FILENO, priorityPrefix: Bool? = nil,
                metadata: Bool = true, skipping skipped: Set<String> = [], emit: (@Sendable (String) -> Void)? = nil,
                metadataProvider: Logger.MetadataProvider? = nil) {
        self.init(setting: LogLevelSetting(level), fileDescriptor: fileDescriptor, priorityPrefix: priorityPrefix, metadata: metadata,
                  skipping: skipped, emit: emit, metadataProvider: metadataProvider)
    }

    /// A handler whose level follows `setting` (a reload changes it) until one is set on it.
    public init(setting: LogLevelSetting, fileDescriptor: Int32 = STDERR_FILENO, priorityPrefix: Bool? = nil,
                metadata: Bool = true, skipping skipped: Set<String> = [], emit: (@Sendable (String) -> Void)? = nil,
                metadataProvider: Logger.MetadataProvider? = nil) {
        self.setting = setting
        self.fileDescriptor = fileDescriptor
        self.withMetadata = metadata
        self.skipped = skipped
        self.emit = emit
        self.withPriorityPrefix = priorityPrefix ?? (isatty(fileDescriptor) == 0)
        self.metadataProvider = metadataProvider
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { $1 } }
        if let call = event.metadata { merged.merge(call) { $1 } }
        if !skipped.isEmpty, let id = merged[MessageID.metadataKey].map(JournalFields.text(of:)), skipped.contains(id) { return }
        let line = Self.format(level: event.level, message: event.message.description, metadata: withMetadata ? merged : [:],
                               priorityPrefix: withPriorityPrefix)
        if let emit { return emit(line) }
        Self.writeAll(fileDescriptor, Array(line.utf8))
    }

    /// One line, newline-terminated. Newlines inside the message are escaped, since systemd
    /// would take each physical line as a separate entry without a priority.
    public static func format(level: Logger.Level, message: String, metadata: Logger.Metadata,
                              priorityPrefix: Bool) -> String {
        var line = priorityPrefix ? "<\(JournalFields.priority(of: level))>" : ""
        line += escapeNewlines(message)
        for key in metadata.keys.sorted() {
            line += " \(key)=\(quoted(JournalFields.text(of: metadata[key]!)))"
        }
        return line + "\n"
    }

    private static func escapeNewlines(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\n", with: "\\n")
    }

    private static func quoted(_ value: String) -> String {
        let plain = !value.isEmpty && !value.contains { $0 == " " || $0 == "\"" || $0 == "=" || $0.isNewline || $0 == "\t" }
        if plain { return value }
        let escaped = escapeNewlines(value).replacingOccurrences(of: "\"", with: "\\\"")
        return "\"\(escaped)\""
    }

    /// write(2) until done; EINTR retried. Other errors (a closed stderr) drop the line: logging
    /// must never fail or block the daemon.
    private static func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let written = write(fd, raw.baseAddress! + offset, raw.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return
                }
                offset += written
            }
        }
    }
}
