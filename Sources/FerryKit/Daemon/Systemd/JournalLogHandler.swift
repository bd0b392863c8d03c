import Foundation
import Logging

/// A swift-log handler that writes structured entries to journald with `sd_journal_sendv`.
///
/// Every metadata key becomes a journal field (see ``JournalFields``), so
/// `journalctl -u ferryd FERRY_STORE=contacts` and `journalctl MESSAGE_ID=<id>` work.
/// Use it only when journald is really there (``FerryLogging`` decides): without journald,
/// `sd_journal_sendv` silently drops entries.
public struct JournalLogHandler: LogHandler {
    /// The shared level, until a level is set on this handler.
    private let setting: LogLevelSetting
    private var ownLevel: Logger.Level?

    public var logLevel: Logger.Level {
        get { ownLevel ?? setting.level }
        set { ownLevel = newValue }
    }
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    /// `SYSLOG_IDENTIFIER`, the name `journalctl -t` filters on.
    public let identifier: String

    public init(identifier: String = "ferryd", level: Logger.Level = .info, metadataProvider: Logger.MetadataProvider? = nil) {
        self.identifier = identifier
        self.setting = LogLevelSetting(level)
        self.metadataProvider = metadataProvider
    }

    /// A handler whose level follows `setting` (a reload changes it) until one is set on it.
    public init(identifier: String = "ferryd", setting: LogLevelSetting, metadataProvider: Logger.MetadataProvider? = nil) {
        self.identifier = identifier
        self.setting = setting
        self.metadataProvider = metadataProvider
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let fields = JournalFields.make(
            level: event.level,
            message: event.message.description,
            metadata: mergedMetadata(event.metadata),
            identifier: identifier,
            file: event.file,
            function: event.function,
            line: event.line
        )
        do {
            try Systemd.journalSend(fields)
        } catch {
            // Logging must not fail the caller; say it once on stderr, which systemd also collects.
            FileHandle.standardError.write(Data("<4>journal write failed (\(error)): \(event.message)\n".utf8))
        }
    }

    /// Handler metadata, then the provider's, then the call's: the most specific wins.
    private func mergedMetadata(_ call: Logger.Metadata?) -> Logger.Metadata {
        var merged = metadata
        if let provided = metadataProvider?.get() {
            merged.merge(provided) { $1 }
        }
        if let call {
            merged.merge(call) { $1 }
        }
        return merged
    }
}
