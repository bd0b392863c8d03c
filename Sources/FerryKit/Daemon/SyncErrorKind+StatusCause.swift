extension SyncError.Kind {
    /// A few words for STATUS=, where a whole error message does not fit: "HTTP 503",
    /// "rate limited", "transport: tls".
    var statusCause: String {
        switch self {
        case .transport(let kind): "transport: \(kind)"
        case .httpStatus(let status): "HTTP \(status)"
        case .rateLimited: "rate limited"
        case .unauthorized: "credentials refused"
        case .malformedResponse: "malformed response"
        case .badRecord: "bad record"
        case .remote(let code): "remote error \(code)"
        case .store(let store): store.summary
        case .configuration: "configuration"
        case .busy: "another process is syncing it"
        case .cancelled: "cancelled"
        }
    }

    /// A short, stable word for journal fields and scripts (`FERRY_ERROR_KIND`):
    /// `transport:connection`, `http:503`, `rate_limited`; never a Swift type name.
    var fieldValue: String {
        switch self {
        case .transport(let kind): "transport:\(kind)"
        case .httpStatus(let status): "http:\(status)"
        case .rateLimited: "rate_limited"
        case .unauthorized: "unauthorized"
        case .malformedResponse: "malformed_response"
        case .badRecord: "bad_record"
        case .remote(let code): "remote:\(code)"
        case .store: "store"
        case .configuration: "configuration"
        case .busy: "busy"
        case .cancelled: "cancelled"
        }
    }
}
