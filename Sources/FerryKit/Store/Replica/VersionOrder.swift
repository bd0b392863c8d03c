import CSQLite
import Foundation

/// The `.ordered` version comparison, on bytes, shared by Swift code and the SQL functions
/// `ferry_version_newer(incoming, stored)` and `ferry_version_order(incoming, stored)` so the
/// merge can decide inside one UPDATE.
///
/// Two versions are ordered as the APIs mean them: numerically when both are integers (as
/// `Int64(_:)` parses them: optional sign, digits, no overflow); as instants when both are ISO
/// 8601 times (``TimestampText``: `2024-01-15T15:08:24Z` and `2024-01-15T15:08:24.5Z`, or
/// `+0000` and `Z`, whose bytes sort the other way); else by bytes (SQLite's BINARY order).
/// Two versions that name the same number or instant are the same version, however written.
enum VersionOrder {
    enum Ordering: Int32, Sendable {
        case older = -1
        case same = 0
        case newer = 1
    }

    /// Where `incoming` stands against `stored`.
    static func order(_ incoming: UnsafeRawBufferPointer, _ stored: UnsafeRawBufferPointer) -> Ordering {
        if let new = integer(incoming), let old = integer(stored) { return new > old ? .newer : new == old ? .same : .older }
        if mayBeTimestamp(incoming), mayBeTimestamp(stored), let new = TimestampText.parse(incoming), let old = TimestampText.parse(stored),
           new.zoned == old.zoned {
            return new.instant > old.instant ? .newer : new.instant == old.instant ? .same : .older
        }
        let common = min(incoming.count, stored.count)
        if common > 0 {
            let order = memcmp(incoming.baseAddress!, stored.baseAddress!, common)
            if order != 0 { return order > 0 ? .newer : .older }
        }
        return incoming.count > stored.count ? .newer : incoming.count == stored.count ? .same : .older
    }

    static func order(_ incoming: String, _ stored: String) -> Ordering {
        var incoming = incoming
        var stored = stored
        return incoming.withUTF8 { new in stored.withUTF8 { old in order(UnsafeRawBufferPointer(new), UnsafeRawBufferPointer(old)) } }
    }

    /// Whether `incoming` is newer than `stored`.
    static func isNewer(_ incoming: UnsafeRawBufferPointer, than stored: UnsafeRawBufferPointer) -> Bool {
        order(incoming, stored) == .newer
    }

    static func isNewer(_ incoming: String, than stored: String) -> Bool {
        order(incoming, stored) == .newer
    }

    /// A cheap look before parsing: `YYYY-` starts every time ``TimestampText`` reads.
    private static func mayBeTimestamp(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.count >= 10 && bytes[4] == UInt8(ascii: "-") && bytes[0] &- UInt8(ascii: "0") < 10
    }

    static func integer(_ bytes: UnsafeRawBufferPointer) -> Int64? {
        var index = 0
        var negative = false
        if let first = bytes.first, first == UInt8(ascii: "+") || first == UInt8(ascii: "-") {
            negative = first == UInt8(ascii: "-")
            index = 1
        }
        guard index < bytes.count else { return nil }
        var value: Int64 = 0
        while index < bytes.count {
            let digit = bytes[index] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (next, overflow2) = negative ? times.subtractingReportingOverflow(Int64(digit)) : times.addingReportingOverflow(Int64(digit))
            guard !overflow1, !overflow2 else { return nil }
            value = next
            index += 1
        }
        return value
    }

    /// Registers `ferry_version_newer(incoming, stored)` (1 or 0) and `ferry_version_order(incoming,
    /// stored)` (1 newer, 0 the same, -1 older) on a connection. Deterministic and direct-only:
    /// they are Ferry's merge helpers, not something schema or views may depend on.
    static func register(on connection: SQLiteConnection) throws(SQLiteError) {
        for (name, asOrder) in [("ferry_version_newer", false), ("ferry_version_order", true)] {
            let code = sqlite3_create_function_v2(
                connection.handle, name, 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_DIRECTONLY, asOrder ? UnsafeMutableRawPointer(bitPattern: 1) : nil,
                { context, _, arguments in
                    let asOrder = sqlite3_user_data(context) != nil
                    guard let arguments, let incoming = arguments[0], let stored = arguments[1] else { return }
                    // NULL never beats anything (the columns are NOT NULL; this is defensive).
                    guard let new = sqlite3_value_text(incoming), let old = sqlite3_value_text(stored) else {
                        sqlite3_result_int(context, asOrder ? -1 : 0)
                        return
                    }
                    let order = VersionOrder.order(
                        UnsafeRawBufferPointer(start: new, count: Int(sqlite3_value_bytes(incoming))),
                        UnsafeRawBufferPointer(start: old, count: Int(sqlite3_value_bytes(stored))))
                    sqlite3_result_int(context, asOrder ? order.rawValue : (order == .newer ? 1 : 0))
                }, nil, nil, nil)
            try SQLite.check(code, connection.handle, sql: "create function \(name)")
        }
    }
}
