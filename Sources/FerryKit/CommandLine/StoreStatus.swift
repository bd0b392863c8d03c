import Foundation

/// One row of `ferry status`. Its JSON form (`--json`) is a stable, documented shape; every key
/// is always present (`null` when it has no value):
///
///     {"store":"demo","kind":"json","state":"ok","last_success":"2026-11-23T10:00:00Z",
///      "last_success_age_seconds":42,"last_attempt":"…","records":1000,"cursor":"…",
///      "last_error":null,"incomplete":null,"pending_records":0,"local_writes_queued":0,
///      "local_writes_refused":0,"conflicts":0,"next_pass":"2026-11-23T10:00:30Z",
///      "next_pass_in_seconds":30,"syncing":false,"consecutive_failures":0,"backoff_cause":null,
///      "overdue_seconds":0}
///
/// `state` is `ok` (the last pass finished and left nothing out), `incomplete` (it finished,
/// but the replica knowingly differs from the remote: `incomplete` says how; local writes not
/// pushed yet, refused by the remote or held in a conflict count), `failing` (the
/// last attempt failed), `never-synced`, `not-configured` (rows of a store no longer in the
/// configuration) or `gone` (a collection a `dav-account` store no longer syncs, whose rows stay).
/// The keys from `next_pass` on come from the running ferryd (``PublishedSchedule``) and are
/// `null` when none runs for this database: `next_pass` is when the next pass may start
/// (`null` while one runs), `syncing` whether one runs now, `consecutive_failures` how many
/// passes failed in a row (above 0 the store is backing off, and `next_pass` is the retry),
/// `backoff_cause` the last failure in a few words while it backs off, `overdue_seconds` how
/// long ago the next pass was due without starting (0 on time): `state` says what the last
/// pass left, this says whether ferryd keeps up (an overloaded or hung daemon, whose published
/// schedule then stops moving).
public struct StoreStatus: Sendable, Equatable, Codable {
    public var store: String
    public var kind: String?
    public var state: String
    public var lastSuccess: Date?
    public var lastSuccessAgeSeconds: Int?
    public var lastAttempt: Date?
    public var records: Int
    public var cursor: String?
    public var lastError: String?
    /// How the replica differs from the remote, when it knowingly does.
    public var incomplete: String?
    /// Records the remote has and the replica could not store yet.
    public var pendingRecords: Int
    /// Local writes waiting to be pushed, refused by the remote, and open conflicts.
    public var localWritesQueued: Int
    public var localWritesRefused: Int
    public var conflicts: Int
    public var nextPass: Date?
    public var nextPassInSeconds: Int?
    public var syncing: Bool?
    public var consecutiveFailures: Int?
    public var backoffCause: String?
    public var overdueSeconds: Int?

    enum CodingKeys: String, CodingKey {
        case store, kind, state, records, cursor, incomplete
        case lastSuccess = "last_success"
        case lastSuccessAgeSeconds = "last_success_age_seconds"
        case lastAttempt = "last_attempt"
        case lastError = "last_error"
        case pendingRecords = "pending_records"
        case localWritesQueued = "local_writes_queued"
        case localWritesRefused = "local_writes_refused"
        case conflicts, syncing
        case nextPass = "next_pass"
        case nextPassInSeconds = "next_pass_in_seconds"
        case consecutiveFailures = "consecutive_failures"
        case backoffCause = "backoff_cause"
        case overdueSeconds = "overdue_seconds"
    }

    /// Every key, `null` included: scripts read a fixed shape.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(store, forKey: .store)
        try container.encode(kind, forKey: .kind)
        try container.encode(state, forKey: .state)
        try container.encode(lastSuccess, forKey: .lastSuccess)
        try container.encode(lastSuccessAgeSeconds, forKey: .lastSuccessAgeSeconds)
        try container.encode(lastAttempt, forKey: .lastAttempt)
        try container.encode(records, forKey: .records)
        try container.encode(cursor, forKey: .cursor)
        try container.encode(lastError, forKey: .lastError)
        try container.encode(incomplete, forKey: .incomplete)
        try container.encode(pendingRecords, forKey: .pendingRecords)
        try container.encode(localWritesQueued, forKey: .localWritesQueued)
        try container.encode(localWritesRefused, forKey: .localWritesRefused)
        try container.encode(conflicts, forKey: .conflicts)
        try container.encode(nextPass, forKey: .nextPass)
        try container.encode(nextPassInSeconds, forKey: .nextPassInSeconds)
        try container.encode(syncing, forKey: .syncing)
        try container.encode(consecutiveFailures, forKey: .consecutiveFailures)
        try container.encode(backoffCause, forKey: .backoffCause)
        try container.encode(overdueSeconds, forKey: .overdueSeconds)
    }

    /// Joins the configured stores with what the database recorded, and with failures ferryd
    /// could not record there (``UnrecordedFailures``): one newer than the store's last
    /// recorded attempt makes it `failing`; and with the running ferryd's schedule.
    /// `kept`: collections a `dav-account` store no longer syncs whose rows stay (`gone`).
    public static func collect(configuration: FerryConfiguration?, states: [SyncState],
                               unrecorded: [String: UnrecordedFailures.Failure] = [:],
                               schedule: [String: PublishedSchedule.Entry] = [:], kept: Set<String> = [], now: Date = Date()) -> [StoreStatus] {
        var byName = Dictionary(uniqueKeysWithValues: states.map { ($0.store, $0) })
        for (name, failure) in unrecorded {
            var state = byName[name] ?? SyncState(store: name)
            guard failure.at > (state.lastAttempt ?? .distantPast) else { continue }
            state.lastAttempt = failure.at
            state.lastError = failure.message
            byName[name] = state
        }
        var rows: [StoreStatus] = []
        for store in configuration?.stores ?? [] {
            rows.append(StoreStatus(store: store.name, kind: store.kind.rawValue, state: byName.removeValue(forKey: store.name), now: now))
        }
        // A store the file names but no process syncs, for problems of its own section.
        for refused in configuration?.refusedStores ?? [] {
            var row = StoreStatus(store: refused.name, kind: nil, state: byName.removeValue(forKey: refused.name), now: now)
            row.state = "failing"
            row.lastError = refused.summary
            rows.append(row)
        }
        for state in byName.values.sorted(by: { $0.store < $1.store }) {
            var row = StoreStatus(store: state.store, kind: nil, state: state, now: now)
            if configuration != nil { row.state = kept.contains(state.store) ? "gone" : "not-configured" }
            rows.append(row)
        }
        for index in rows.indices {
            guard let entry = schedule[rows[index].store] else { continue }
            rows[index].nextPass = entry.nextPass
            rows[index].nextPassInSeconds = entry.nextPass.map { max(0, Int($0.timeIntervalSince(now).rounded(.up))) }
            rows[index].syncing = entry.running
            rows[index].consecutiveFailures = entry.failures
            rows[index].backoffCause = entry.failures > 0 ? entry.cause : nil
            rows[index].overdueSeconds = entry.nextPass.map { max(0, Int(now.timeIntervalSince($0))) } ?? 0
        }
        return rows
    }

    init(store: String, kind: String?, state: SyncState?, now: Date) {
        self.store = store
        self.kind = kind
        lastSuccess = state?.lastSuccess
        lastSuccessAgeSeconds = state?.lastSuccess.map { Int(now.timeIntervalSince($0)) }
        lastAttempt = state?.lastAttempt
        records = state?.recordCount ?? 0
        cursor = state?.cursor
        lastError = state?.lastError
        incomplete = state.flatMap(Self.incompleteness)
        pendingRecords = state?.pendingRecords ?? 0
        localWritesQueued = state?.localWritesQueued ?? 0
        localWritesRefused = state?.localWritesRefused ?? 0
        conflicts = state?.openConflicts ?? 0
        self.state = Self.state(of: state)
    }

    /// How the store's replica knowingly differs from the remote, in words; nil when it does
    /// not. The one source of the `incomplete` state, so that state always comes with its
    /// reason: the last pull's words, else what was counted since it (local writes written
    /// after it ended, or refused or held by a push since, which records no pull's words;
    /// records left to fetch again).
    static func incompleteness(of state: SyncState) -> String? {
        if let words = state.incomplete, !words.isEmpty { return words }
        var gaps: [ReplicaGap] = []
        if state.localWritesQueued + state.openConflicts + state.localWritesRefused > 0 {
            gaps.append(.localChangesNotPushed(queued: state.localWritesQueued, held: state.openConflicts, refused: state.localWritesRefused, reason: state.lastRefusal))
        }
        if state.pendingRecords > 0 {
            gaps.append(.recordsSkipped(count: state.pendingRecords, sample: [], rereadAll: false))
        }
        return ReplicaGap.summary(gaps)
    }

    /// `ferry status --check`'s exit code over `rows`, for scripts and monitoring: 1 when a
    /// store is `failing`, else 2 when one is anything but `ok` (incomplete, never synced, gone,
    /// no longer configured), else 0; the table's codes for a pass.
    public static func checkExitCode(_ rows: [StoreStatus]) -> FerryExitCode {
        if rows.contains(where: { $0.state == "failing" }) { return .failure }
        if rows.contains(where: { $0.state != "ok" }) { return .incomplete }
        return .success
    }

    /// The state word of a store's sync state: failing before incomplete before ok.
    static func state(of state: SyncState?) -> String {
        guard let state, state.lastAttempt != nil || state.lastSuccess != nil else { return "never-synced" }
        let failedLast = state.lastError != nil && (state.lastSuccess == nil || (state.lastAttempt ?? .distantPast) > (state.lastSuccess ?? .distantPast))
        if failedLast { return "failing" }
        if incompleteness(of: state) != nil { return "incomplete" }
        return state.lastSuccess == nil ? "never-synced" : "ok"
    }

    /// JSON lines encoder settings shared by `status --json` and `changes`.
    public static func makeEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    /// The CURSOR column: what a person can read of a cursor, not the whole of it. A JSON
    /// store's high-water mark or where its next pass starts (a delta link, a sync token), the
    /// last segment of a sync-token URL, else the cursor's start; at most 20 characters
    /// (`--json` has it whole). A cursor of a first page's validators alone (a store that lists
    /// everything, such as one whose versions are digests) has nothing to show.
    static func briefCursor(_ cursor: String) -> String {
        if cursor.hasPrefix("{"), let object = try? JSONSerialization.jsonObject(with: Data(cursor.utf8)) as? [String: Any] {
            if let mark = object["highWater"] as? String { return mark.shortened(to: 20) }
            if let date = object["updatedAt"] as? String ?? object["after"] as? String { return date.shortened(to: 20) }
            if let delta = object["delta"] as? String, !delta.hasPrefix("{") { return briefCursor(delta) }
            return object.keys.allSatisfy(Self.validatorKeys.contains) ? "-" : cursor.shortened(to: 20)
        }
        if cursor.contains("://") || cursor.hasPrefix("/") {
            let segment = cursor.split(separator: "/").last.map(String.init) ?? cursor
            return segment.shortened(to: 20)
        }
        return cursor.shortened(to: 20)
    }

    /// A JSON store's cursor members that only make the first request conditional.
    private static let validatorKeys: Set<String> = ["etag", "lastModified", "firstURL"]

    /// The NEXT column: `syncing`, `in 42s`, `in 5m (retry 3)` while backing off, `-` without
    /// a running ferryd.
    static func next(_ row: StoreStatus) -> String {
        if row.syncing == true { return "syncing" }
        guard let seconds = row.nextPassInSeconds else { return "-" }
        // The schedule is published about once a second: a pass a moment past due is "now".
        let overdue = row.overdueSeconds ?? 0
        let when = overdue >= lateAfterSeconds ? "late " + age(overdue) : seconds == 0 ? "now" : "in " + age(seconds)
        guard let failures = row.consecutiveFailures, failures > 0 else { return when }
        return when + " (retry \(failures))"
    }

    /// Seconds past due from which the table says a pass is late rather than starting now.
    static let lateAfterSeconds = 3

    static func age(_ seconds: Int) -> String {
        seconds < 120 ? "\(seconds)s" : seconds < 7200 ? "\(seconds / 60)m" : seconds < 172_800 ? "\(seconds / 3600)h" : "\(seconds / 86_400)d"
    }
}
