import Foundation

/// Pass failures ferryd could not write into the replica, published in its runtime directory
/// so that `ferry status` still says the store is failing.
///
/// A store's last error lives in the replica (`ferry_sync_state`), which is exactly what a full
/// or read-only disk refuses to take: without this file, `ferry status` would go on reading
/// the last recorded success and say `ok` while every pass fails. The runtime directory is a
/// tmpfs under systemd (`RuntimeDirectory=ferry`), so it takes writes when the replica's disk
/// does not.
///
/// The file names the database it speaks for, and each failure carries its time: a failure
/// older than the replica's own last attempt has been superseded by a pass the replica did
/// record, so a stale file (a crash, a moved database) never overrides what the replica says.
///
///     {"database":"/var/lib/ferry/ferry.db","pid":812,
///      "stores":{"disk":{"at":"2026-11-24T08:00:00.125Z","message":"replica disk is full: ..."}}}
public struct UnrecordedFailures: Sendable, Equatable, Codable {
    /// One store's failure that the replica does not hold.
    public struct Failure: Sendable, Equatable, Codable {
        /// When the pass failed.
        public var at: Date
        /// The failure as ``SyncError/description`` says it (secrets already redacted).
        public var message: String

        public init(at: Date, message: String) {
            self.at = at
            self.message = message
        }
    }

    /// The replica these failures belong to, as ferryd opened it.
    public var database: String
    public var pid: Int32
    public var stores: [String: Failure]

    public static let fileName = "unrecorded-failures.json"

    public init(database: String, pid: Int32 = getpid(), stores: [String: Failure]) {
        self.database = database
        self.pid = pid
        self.stores = stores
    }

    /// Replaces the file in `directory` atomically (write, then rename), or removes it when no
    /// failure is left.
    public func publish(directory: String) throws(ReloadError) {
        let path = Self.path(directory)
        guard !stores.isEmpty else {
            if unlink(path) != 0 && errno != ENOENT {
                throw .fileOperationFailed(operation: "remove", path: path, errno: errno)
            }
            return
        }
        let text: String
        do {
            text = String(decoding: try Self.encoder().encode(self), as: UTF8.self) + "\n"
        } catch {
            preconditionFailure("encoding strings and dates cannot fail: \(error)")
        }
        try ReloadAcknowledgement.writeAtomically(text, to: path)
    }

    /// The failures published in `directory` for the replica at `database`: empty when there
    /// is no file, it cannot be read (another user's runtime directory), it is malformed, or
    /// it speaks for another database.
    public static func read(directory: String, database: String) -> [String: Failure] {
        guard let data = FileManager.default.contents(atPath: path(directory)) else { return [:] }
        guard let published = try? decoder().decode(Self.self, from: data),
              sameFile(published.database, database) else { return [:] }
        return published.stores
    }

    /// JSON as ferryd's runtime files are written (this one and ``PublishedSchedule``): sorted
    /// keys, timestamps with milliseconds.
    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(InternetTimestamp.string(from: date))
        }
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let text = try decoder.singleValueContainer().decode(String.self)
            guard let date = InternetTimestamp.date(from: text) else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a timestamp: \(text)"))
            }
            return date
        }
        return decoder
    }

    private static func path(_ directory: String) -> String {
        (directory as NSString).appendingPathComponent(fileName)
    }

    /// Whether two paths name one file: the same device and inode, or, when either cannot be
    /// examined, the same standardized path.
    static func sameFile(_ a: String, _ b: String) -> Bool {
        var first = stat()
        var second = stat()
        if stat(a, &first) == 0, stat(b, &second) == 0 {
            return first.st_dev == second.st_dev && first.st_ino == second.st_ino
        }
        return (a as NSString).standardizingPath == (b as NSString).standardizingPath
    }
}
