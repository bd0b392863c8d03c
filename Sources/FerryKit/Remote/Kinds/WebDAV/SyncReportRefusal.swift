/// What a pass does when its sync-collection REPORT is not answered with a multistatus, or is
/// answered with a DAV:error: a pure decision, so the rules read as a table (its tests).
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
        if [405, 501, 415].contains(status) { return .fallBack }
        if [400, 403, 409].contains(status), errors.contains(DAVName.supportedReport) { return .fallBack }
        return .fail
    }
}
