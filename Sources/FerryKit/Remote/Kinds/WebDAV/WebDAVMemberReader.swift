import Foundation

/// How one member of a collection becomes a change: from its `DAV:response` in a query or
/// multiget answer, or from a GET of it alone. Pure; the pass acts on the verdict.
///
/// | Answer | Verdict |
/// |---|---|
/// | response 2xx with data within `max-record-size` | the record (etag as version), its body with LF line ends (``DAVBodyForm``) |
/// | response 2xx, data too large, or no data | a problem naming why |
/// | response 404 or 410 | fetch it alone: deleted since it was listed, or misread by the server (Xandikos and hrefs with `%23`) |
/// | response, any other status | a problem naming the status |
/// | GET 2xx with an ETag and UTF-8 body within the limit | the record |
/// | GET 2xx otherwise | a problem naming why |
/// | GET 404 or 410 | deleted |
/// | GET 401, 403, 429 | the pass fails: credentials or rate limits concern every member |
/// | GET, any other status | a problem naming the status |
struct WebDAVMemberReader: Sendable {
    var kind: StoreKind
    var maxRecordBytes: Int

    enum Verdict: Sendable, Equatable {
        case change(RecordChange)
        /// The member is not stored this pass; the reason names why.
        case problem(String)
        /// Ask for the member alone with a GET.
        case fetchAlone
        /// The answer concerns the whole pass (GET only).
        case failPass
    }

    /// A member's response in a query or multiget answer.
    func read(_ response: Multistatus.Response, id: String) -> Verdict {
        switch response.effectiveStatus ?? 200 {
        case 404, 410:
            return .fetchAlone
        case 200..<300:
            if response.dataTooLarge { return .problem(tooLarge) }
            guard let data = response.data else {
                return .problem("no \(kind == .caldav ? "calendar-data" : "address-data") in the answer")
            }
            let body = DAVBodyForm.replica(Data(data.utf8))
            guard body.count <= maxRecordBytes else { return .problem(tooLarge) }
            return .change(.upsert(RemoteRecord(id: id, version: response.etag ?? "", body: body, fields: fields(of: data))))
        case let other:
            return .problem("status \(other)")
        }
    }

    /// A member fetched alone after a multiget left it out or answered 404 for it.
    func read(get head: ResponseHead, body: Data, id: String) -> Verdict {
        switch head.status {
        case 200..<300:
            let etag = head.headers["ETag"] ?? ""
            if body.count > maxRecordBytes { return .problem(tooLarge) }
            guard !etag.isEmpty else { return .problem("GET answered without an ETag") }
            guard let text = String(validating: body, as: UTF8.self) else { return .problem("body is not valid UTF-8") }
            return .change(.upsert(RemoteRecord(id: id, version: etag, body: DAVBodyForm.replica(body), fields: fields(of: text))))
        case 404, 410:
            return .change(.delete(id: id))
        case 401, 403, 429:
            return .failPass
        default:
            return .problem("missing from the multiget answer, and GET answered \(head.status)")
        }
    }

    private var tooLarge: String { "larger than \(maxRecordBytes) bytes" }

    private func fields(of text: String) -> [String: String] {
        kind == .caldav ? CardFieldExtractor.fields(iCalendar: text) : CardFieldExtractor.fields(vCard: text)
    }
}
