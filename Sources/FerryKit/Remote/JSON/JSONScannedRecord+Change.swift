import Foundation

extension JSONScannedRecord {
    /// What a scanned record becomes: a record to merge, or a problem for the store's
    /// `on-bad-record` policy.
    enum Outcome {
        case record(RemoteRecord)
        case problem(RecordProblem)
    }

    /// The record as the merge engine takes it, its body the record's exact bytes in `page`.
    func outcome(in page: Data, maxBytes: Int, position: Int) -> Outcome {
        if let problem { return .problem(problem) }
        guard let id else { return .problem(RecordProblem(position: position, reason: "record has no id")) }
        guard range.count <= maxBytes else {
            return .problem(RecordProblem(position: position, id: id, reason: "record is \(range.count) bytes, more than max-record-size \(maxBytes)"))
        }
        return .record(RemoteRecord(id: id, version: version ?? "", body: page.subdata(in: range)))
    }
}

extension SyncError {
    /// A 2xx answer whose body is not the JSON expected: an HTML page (a login or proxy page
    /// with 200), or malformed JSON, at a byte offset.
    init(malformedJSON error: JSONScanError, status: Int, contentType: String?, url: String, store: String) {
        let type = contentType ?? "no content type"
        let what = type.lowercased().contains("html") ? "an HTML page (\(type)) instead of JSON" : "malformed JSON (\(error.reason))"
        self.init(.malformedResponse, store: store, url: url, position: "byte \(error.offset)", message: "HTTP \(status) carried \(what)")
    }
}
