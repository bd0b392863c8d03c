import Logging

/// Fixed journald `MESSAGE_ID`s of Ferry's key events, so `journalctl MESSAGE_ID=<id>` finds
/// every pass failure (or reload, or backoff) across restarts and machines.
///
///     logger.info("pass finished", metadata: MessageID.passFinished.metadata)
///
/// The ids are random 128-bit values generated once (as `journalctl --new-id128` would) and
/// must never change: people put them in scripts and alert rules.
public enum MessageID: String, Sendable, CaseIterable {
    case passStarted = "2e864231d3ca431a8aa876e279b76589"
    case passFinished = "214e4b6757ab436fa07ada0da2a4271a"
    case passFailed = "da149cc9f5674d80aa3d4421ce53d12e"
    case reload = "1c2b8dda70ee45fcba1aece27793ba66"
    case reloadFailed = "981d499fa62c454795b0cc04f9653d4b"
    case backoff = "229e6bcefd7c4a3da1e1203a2cb6e4cf"
    case ready = "ee428cda5c764a94bb23379336667f87"
    case stopping = "16578e9350f7435d81d6fbfbf0470c28"
    case watchdogStuck = "655f48b95ab746ac857280d3433675ec"
    case reconcileRefused = "e6a9492c1c714d4b9d9649f5b9cf73ff"
    /// A pass finished with the replica knowingly different from the remote (``ReplicaGap``).
    case passIncomplete = "7b3f0c92d1e84a5f9a6e2c4d8b1f5e07"
    /// The replica's file system turned read-only or full (found after a database failure).
    case replicaUnwritable = "8d1f0b6e3a5c4e27b9f4c2a7d6e1053b"
    /// The replica failed the integrity check ferryd runs after start on a large file.
    case replicaDamaged = "98bde39b1b4f4cb693bd8db64437ca47"
    /// A local change and a remote change met on one record (``ConflictPolicy``).
    case conflictRecorded = "070b93a248ed4040ad5abbd5b5eed890"
    /// The remote refused a local change (a 403, a validation error); it stays queued.
    case pushRefused = "f38771fffe424a2aac5f378703743652"
    /// `metrics-listen` is configured but cannot be served (the port is taken); syncing goes on.
    case metricsUnavailable = "aba9a1327de346d4be41bdc861aa0e15"
    /// A refresh token the OAuth2 server rotated could not be saved (``RefreshTokenFile``):
    /// ferryd holds it in memory only, until a later save succeeds.
    case refreshTokenUnsaved = "c3a688b84d834173922afb7c2a3bf144"

    /// The metadata key the log handlers turn into the `MESSAGE_ID` field.
    public static let metadataKey = "message_id"

    /// `["message_id": id]`, to merge into a log call's metadata.
    public var metadata: Logger.Metadata {
        [Self.metadataKey: .string(rawValue)]
    }
}
