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
}
