import Foundation

/// One row of `ferry status`. Its JSON form (`--json`) is a stable, documented shape:
///
///     {"store":"demo","kind":"json","state":"ok","last_success":"2026-11-23T10:00:00Z",
///      "last_success_age_seconds":42,"last_attempt":"…","records":1000,"cursor":"…","last_error":null}
///
/// `state` is `ok` (the last attempt succeeded), `failing` (it failed), `never-synced`, or
/// `not-configured` (rows from a store no longer in the configuration).
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

    enum CodingKeys: String, CodingKey {
        case store, kind, state, records, cursor
        case lastSuccess = "last_success"
        case lastSuccessAgeSeconds = "last_success_age_seconds"
        case lastAttempt = "last_attempt"
        case lastError = "last_error"
    }

    /// Joins the configured stores with what the database recorded.
    public static func collect(configuration: FerryConfiguration?, states: [SyncState], now: Date = Date()) -> [StoreStatus] {
        var byName = Dictionary(uniqueKeysWithValues: states.map { ($0.store, $0) })
        var rows: [StoreStatus] = []
        for store in configuration?.stores ?? [] {
            rows.append(StoreStatus(store: store.name, kind: store.kind.rawValue, state: byName.removeValue(forKey: store.name), now: now))
        }
        for state in byName.values.sorted(by: { $0.store < $1.store }) {
            var row = StoreStatus(store: state.store, kind: nil, state: state, now: now)
            if configuration != nil { row.state = "not-configured" }
            rows.append(row)
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
        if let state, state.lastAttempt != nil || state.lastSuccess != nil {
            let failedLast = state.lastError != nil && (state.lastSuccess == nil || (state.lastAttempt ?? .distantPast) > (state.lastSuccess ?? .distantPast))
            self.state = failedLast ? "failing" : "ok"
        } else {
            self.state = "never-synced"
        }
    }

    /// JSON lines encoder settings shared by `status --json` and `changes`.
    public static func makeEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    /// A table for people: store, state, last success and its age, records, cursor, error.
    public static func table(_ rows: [StoreStatus]) -> String {
        let header = ["STORE", "STATE", "LAST SUCCESS", "AGE", "RECORDS", "CURSOR", "LAST ERROR"]
        let formatter = ISO8601DateFormatter()
        let body: [[String]] = rows.map { row in
            let success: String = row.lastSuccess.map { formatter.string(from: $0) } ?? "-"
            let age: String = row.lastSuccessAgeSeconds.map(Self.age) ?? "-"
            let cursor: String = row.cursor.map { shorten($0, to: 24) } ?? "-"
            let error: String = row.lastError.map { shorten($0, to: 60) } ?? "-"
            return [row.store, row.state, success, age, "\(row.records)", cursor, error]
        }
        let widths = header.indices.map { column in ([header] + body).map { $0[column].count }.max() ?? 0 }
        return ([header] + body).map { cells in
            cells.enumerated().map { index, cell in
                index == cells.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }

    static func shorten(_ text: String, to length: Int) -> String {
        text.count > length ? String(text.prefix(length - 3)) + "..." : text
    }

    static func age(_ seconds: Int) -> String {
        seconds < 120 ? "\(seconds)s" : seconds < 7200 ? "\(seconds / 60)m" : seconds < 172_800 ? "\(seconds / 3600)h" : "\(seconds / 86_400)d"
    }
}
