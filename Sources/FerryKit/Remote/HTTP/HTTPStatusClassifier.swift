import Foundation

/// Turns HTTP answers the JSON kinds cannot use into ``SyncError``s, the same way for each kind.
enum RemoteResponseErrors {
    /// How long the server asked us to wait: `Retry-After` (seconds or an HTTP date), or
    /// `X-RateLimit-Remaining: 0` with `X-RateLimit-Reset` (epoch seconds).
    static func retryAfter(_ headers: HTTPHeaders, now: Date = Date()) -> Duration? {
        if let value = headers["Retry-After"]?.trimmingCharacters(in: .whitespaces) {
            if let seconds = Double(value), seconds >= 0 { return .milliseconds(Int64(seconds * 1000)) }
            if let date = httpDate(value) { return .milliseconds(Int64(max(0, date.timeIntervalSince(now)) * 1000)) }
        }
        if isRateLimitExhausted(headers), let reset = headers["X-RateLimit-Reset"].flatMap({ Double($0.trimmingCharacters(in: .whitespaces)) }) {
            return .milliseconds(Int64(max(0, reset - now.timeIntervalSince1970) * 1000))
        }
        return nil
    }

    static func isRateLimitExhausted(_ headers: HTTPHeaders) -> Bool {
        headers["X-RateLimit-Remaining"]?.trimmingCharacters(in: .whitespaces) == "0"
    }

    static func httpDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: text)
    }

    /// The error for a non-2xx answer that no kind-specific rule claimed.
    static func status(_ page: HTTPPageLoader.Page, store: String) -> SyncError {
        let status = page.head.status
        let url = page.request.url
        let wait = retryAfter(page.head.headers)
        if status == 429 || (status == 503 && wait != nil) || ((status == 403 || status == 429) && isRateLimitExhausted(page.head.headers)) {
            return SyncError(.rateLimited, store: store, url: url, message: "rate limited (HTTP \(status))", retryAfter: wait)
        }
        if status == 401 || status == 403 {
            return SyncError(.unauthorized, store: store, url: url, message: "the remote refused the credentials (HTTP \(status))")
        }
        return SyncError(.httpStatus(status), store: store, url: url, message: "unexpected HTTP status \(status)\(snippet(page.body))")
    }

    static func transport(_ error: TransferError, store: String) -> SyncError {
        SyncError(.transport(error.kind), store: store, url: error.url, message: "transfer failed: \(error.kind): \(error.detail)")
    }

    static func malformed(_ error: JSONScanError, page: HTTPPageLoader.Page, store: String) -> SyncError {
        let contentType = page.head.headers["Content-Type"] ?? "no content type"
        let what = contentType.lowercased().contains("html") ? "an HTML page (\(contentType)) instead of JSON" : "malformed JSON (\(error.reason))"
        return SyncError(.malformedResponse, store: store, url: page.request.url, position: "byte \(error.offset)",
                         message: "HTTP \(page.head.status) carried \(what)")
    }

    /// A short, printable start of a body for error messages (never headers: they carry secrets).
    static func snippet(_ body: Data) -> String {
        guard !body.isEmpty else { return "" }
        let text = String(decoding: body.prefix(160), as: UTF8.self)
            .replacingOccurrences(of: "\n", with: " ")
        return ": " + text
    }

    /// Builds a RemoteRecord body or a problem for one scanned record.
    enum Scanned {
        case record(RemoteRecord)
        case problem(RecordProblem)
    }

    static func change(for record: JSONScannedRecord, in body: Data, maxBytes: Int, position: Int) -> Scanned {
        if let problem = record.problem { return .problem(problem) }
        guard let id = record.id else { return .problem(RecordProblem(position: position, reason: "record has no id")) }
        guard record.range.count <= maxBytes else {
            return .problem(RecordProblem(position: position, id: id, reason: "record is \(record.range.count) bytes, more than max-record-bytes \(maxBytes)"))
        }
        return .record(RemoteRecord(id: id, version: record.version ?? "", body: body.subdata(in: record.range)))
    }

    /// Percent-encodes a query parameter value (RFC 3986 unreserved characters pass).
    static func queryEncode(_ value: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value
    }
}
