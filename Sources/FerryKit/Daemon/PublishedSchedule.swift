import Foundation

/// ferryd's schedule as `ferry status` shows it: when each store's next pass is due, whether
/// one runs now, and how long it has been failing, published in the runtime directory.
///
/// The schedule lives only in the daemon's memory (the replica records what passes did, not
/// what comes next), and `ferry status` is another process, often another user in the
/// replica's group: a small file on the runtime tmpfs reaches it without a socket or a write
/// to the replica per pass. ferryd rewrites it at most once a second, and only when it
/// changed. A reader ignores it unless the process that wrote it still runs and it speaks for
/// the same database, so a crash or a stopped daemon never shows a schedule nobody keeps.
///
///     {"database":"/var/lib/ferry/ferry.db","pid":812,"stores":{"demo":{"cause":null,
///      "failures":0,"next_pass":"2026-11-24T08:00:30.000Z","running":false}}}
public struct PublishedSchedule: Sendable, Equatable, Codable {
    /// One store's place in the schedule.
    public struct Entry: Sendable, Equatable, Codable {
        /// When the next pass may start (later while backing off, or while the remote's
        /// Retry-After lasts); nil while it runs.
        public var nextPass: Date?
        public var running: Bool
        /// Failed passes in a row; above 0 the store is backing off.
        public var failures: Int
        /// The last failure in a few words ("HTTP 503"), while failing.
        public var cause: String?

        public init(nextPass: Date?, running: Bool, failures: Int, cause: String?) {
            self.nextPass = nextPass
            self.running = running
            self.failures = failures
            self.cause = cause
        }

        enum CodingKeys: String, CodingKey {
            case running, failures, cause
            case nextPass = "next_pass"
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(nextPass, forKey: .nextPass)
            try container.encode(running, forKey: .running)
            try container.encode(failures, forKey: .failures)
            try container.encode(cause, forKey: .cause)
        }
    }

    public var database: String
    public var pid: Int32
    public var stores: [String: Entry]

    public static let fileName = "schedule.json"

    public init(database: String, pid: Int32 = getpid(), stores: [String: Entry]) {
        self.database = database
        self.pid = pid
        self.stores = stores
    }

    /// Replaces the file in `directory` atomically.
    public func publish(directory: String) throws(ReloadError) {
        try ReloadAcknowledgement.writeAtomically(text, to: Self.path(directory))
    }

    /// The file's text: what `JSONEncoder` with sorted keys writes, written directly (ferryd
    /// publishes every second, and 5,000 stores took the encoder 50 ms).
    var text: String {
        var out = "{\"database\":" + JSONText.quoted(database) + ",\"pid\":\(pid),\"stores\":{"
        for (index, name) in stores.keys.sorted().enumerated() {
            let entry = stores[name]!
            if index > 0 { out += "," }
            out += JSONText.quoted(name) + ":{\"cause\":" + (entry.cause.map(JSONText.quoted) ?? "null")
                + ",\"failures\":\(entry.failures),\"next_pass\":" + (entry.nextPass.map { "\"" + InternetTimestamp.string(from: $0) + "\"" } ?? "null")
                + ",\"running\":" + (entry.running ? "true" : "false") + "}"
        }
        return out + "}}\n"
    }

    /// Removes the file (ferryd stopping), so nothing reads a schedule nobody keeps.
    public static func withdraw(directory: String) {
        unlink(path(directory))
    }

    /// The schedule published in `directory` for the replica at `database`, if its writer
    /// still runs; empty otherwise (no file, unreadable, malformed, another database, or a
    /// process that is gone).
    public static func read(directory: String, database: String) -> [String: Entry] {
        guard let data = FileManager.default.contents(atPath: path(directory)),
              let published = try? UnrecordedFailures.decoder().decode(Self.self, from: data),
              UnrecordedFailures.sameFile(published.database, database),
              kill(published.pid, 0) == 0 || errno == EPERM else { return [:] }
        return published.stores
    }

    /// The schedule published in `directory` whatever its database, if its writer still runs:
    /// which replica a running ferryd keeps, when its configuration file can no longer be read
    /// (a reload it refused).
    public static func running(directory: String) -> PublishedSchedule? {
        guard let data = FileManager.default.contents(atPath: path(directory)),
              let published = try? UnrecordedFailures.decoder().decode(Self.self, from: data),
              kill(published.pid, 0) == 0 || errno == EPERM else { return nil }
        return published
    }

    private static func path(_ directory: String) -> String {
        (directory as NSString).appendingPathComponent(fileName)
    }
}
