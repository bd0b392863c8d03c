import Testing
@testable import FerryKit
import FerryTestSupport

/// When a sync-collection REPORT fails, what the pass does: the table of SyncReportRefusal.
@Suite struct SyncReportRefusalTests {
    struct Row: Sendable, CustomStringConvertible {
        var status: Int
        var errors: [String] = []
        var token = "stored-token"
        var incremental = true
        var decision: SyncReportRefusal
        var description: String { "\(status) \(errors) token \(token.isEmpty ? "empty" : "stored") -> \(decision)" }
    }

    static let table: [Row] = [
        Row(status: 403, errors: [DAVName.validSyncToken], decision: .resync),     // Radicale
        Row(status: 412, errors: [DAVName.validSyncToken], decision: .resync),     // Xandikos
        Row(status: 409, errors: [DAVName.validSyncToken], decision: .resync),
        Row(status: 403, errors: [DAVName.validSyncToken], token: "", decision: .fail),
        Row(status: 403, errors: [DAVName.validSyncToken], incremental: false, decision: .fail),
        Row(status: 405, decision: .fallBack),                                      // nginx dav-ext
        Row(status: 501, decision: .fallBack),                                      // Apache mod_dav_fs
        Row(status: 415, decision: .fallBack),
        Row(status: 403, errors: [DAVName.supportedReport], decision: .fallBack),   // sabre/dav ReportNotSupported
        Row(status: 400, errors: [DAVName.supportedReport], decision: .fallBack),
        Row(status: 403, errors: [DAVName.supportedFilter], decision: .fallBack),  // RFC 4791 7.7
        // Real errors are not read as "no sync-collection".
        Row(status: 400, decision: .fail),                                          // could not parse (or no) body
        Row(status: 403, decision: .fail),                                          // no access
        Row(status: 404, decision: .fail),                                          // no collection
        Row(status: 412, decision: .fail),
        Row(status: 500, decision: .fail),
        Row(status: 207, errors: ["DAV:need-privileges"], decision: .fail),
    ]

    @Test(arguments: table)
    func decision(_ row: Row) {
        #expect(SyncReportRefusal.decide(status: row.status, errors: row.errors, sentToken: row.token, incremental: row.incremental) == row.decision)
    }

    /// Every other REPORT (addressbook-query, calendar-query) reads "not supported" the same
    /// way: the table's fall-back rows, and nothing else.
    @Test(arguments: table.filter { !$0.errors.contains(DAVName.validSyncToken) })
    func everyReportReadsNotSupportedAlike(_ row: Row) {
        #expect(SyncReportRefusal.reportNotSupported(status: row.status, errors: row.errors) == (row.decision == .fallBack))
    }
}
