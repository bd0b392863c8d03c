/// What a pass does when its sync-collection REPORT is not answered with a multistatus, or is
/// answered with a DAV:error: a pure decision, so the rules read as a table (its tests). Every
/// other REPORT (addressbook-query, calendar-query with its time range) reads "this server does
/// not do that report" the same way, ``reportNotSupported(status:errors:)``, and falls back to
/// what needs no such report.
///
/// | answer                                                          | decision                 |
/// |-----------------------------------------------------------------|--------------------------|
/// | `DAV:valid-sync-token` for a stored token                       | resync from an empty one |
/// | `DAV:valid-sync-token` for the empty token                      | fail                     |
/// | 405, 501 (method or report not implemented)                     | fall back to PROPFIND    |
/// | 400, 403, 409, 415 with `DAV:supported-report`                  | fall back to PROPFIND    |
/// | 415 (the REPORT body's type is not understood)                  | fall back to PROPFIND    |
/// | anything else: a plain 400 (the server could not read the body), | fail, classified as any  |
/// | a 403 (no access), a 404 (no collection), 5xx...                | HTTP answer              |
///
/// Falling back on any 400 would hide real errors: a server that could not parse the request
/// (or lost its body to a redirect) would be read as "no sync-collection", and every later
/// pass would list the whole collection.
enum SyncReportRefusal: Equatable {
    case resync
    case fallBack
    case fail

    static func decide(status: Int, errors: [String], sentToken: String, incremental: Bool) -> SyncReportRefusal {
        if errors.contains(DAVName.validSyncToken) {
            return !sentToken.isEmpty && incremental ? .resync : .fail
        }
        return reportNotSupported(status: status, errors: errors) ? .fallBack : .fail
    }

    /// Whether an answer to a REPORT says the server does not do that report (or that filter):
    /// 405, 501 or 415; or 400, 403 or 409 naming `DAV:supported-report` (RFC 3253 §3.6) or
    /// `CALDAV:supported-filter` (RFC 4791 §7.7). A 403 without either is no access, as for
    /// any request: never read as "not supported", which would hide refused credentials.
    static func reportNotSupported(status: Int, errors: [String]) -> Bool {
        if [405, 501, 415].contains(status) { return true }
        return [400, 403, 409].contains(status) && (errors.contains(DAVName.supportedReport) || errors.contains(DAVName.supportedFilter))
    }
}
