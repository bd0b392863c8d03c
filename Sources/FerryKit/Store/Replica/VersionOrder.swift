import CSQLite
import Foundation

/// The `.ordered` version comparison, on bytes, shared by Swift code and the SQL function
/// `ferry_version_newer(incoming, stored)` so the merge can decide inside one UPDATE.
enum VersionOrder {
    /// Whether `incoming` is newer than `stored`: numerically when both are integers (as
    /// `Int64(_:)` parses them: optional sign, digits, no overflow), else by bytes (SQLite's
    /// BINARY order; ISO-8601 UTC timestamps of one format sort correctly).
    static func isNewer(_ incoming: UnsafeRawBufferPointer, than stored: UnsafeRawBufferPointer) -> Bool {
        if let new = integer(incoming), let old = integer(stored) { return new > old }
        let common = min(incoming.count, stored.count)
        if common > 0 {
            let order = memcmp(incoming.baseAddress!, stored.baseAddress!, common)
            if order != 0 { return order > 0 }
        }
        return incoming.count > stored.count
    }

    static func isNewer(_ incoming: String, than stored: String) -> Bool {
        var incoming = incoming
        var stored = stored
        return incoming.withUTF8 { new in stored.withUTF8 { old in isNewer(UnsafeRawBufferPointer(new), than: UnsafeRawBufferPointer(old)) } }
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

    /// Registers `ferry_version_newer(incoming, stored)` on a connection. Deterministic and
    /// direct-only: it is Ferry's merge helper, not something schema or views may depend on.
    static func register(on connection: SQLiteConnection) throws(SQLiteError) {
        let code = sqlite3_create_function_v2(
            connection.handle, "ferry_version_newer", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_DIRECTONLY, nil,
            { context, _, arguments in
                guard let arguments, let incoming = arguments[0], let stored = arguments[1] else { return }
                // NULL never beats anything (the columns are NOT NULL; this is defensive).
                guard let new = sqlite3_value_text(incoming), let old = sqlite3_value_text(stored) else {
                    sqlite3_result_int(context, 0)
                    return
                }
                let result = VersionOrder.isNewer(
                    UnsafeRawBufferPointer(start: new, count: Int(sqlite3_value_bytes(incoming))),
                    than: UnsafeRawBufferPointer(start: old, count: Int(sqlite3_value_bytes(stored))))
                sqlite3_result_int(context, result ? 1 : 0)
            }, nil, nil, nil)
        try SQLite.check(code, connection.handle, sql: "create function ferry_version_newer")
    }
}
