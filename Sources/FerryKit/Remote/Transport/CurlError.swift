import CCurl

/// A libcurl easy-interface result code, as a pattern-matchable error.
///
///     catch CurlError.operationTimedOut { ... }
///
/// Codes that can only mean a bug in Ferry (a bad option, a bad argument) never become a
/// `CurlError`: ``Curl/check(_:_:)`` traps on them.
public struct CurlError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The raw `CURLcode`.
    public let code: UInt32

    init(_ code: CURLcode) {
        self.code = code.rawValue
    }

    public var description: String {
        String(cString: curl_easy_strerror(CURLcode(rawValue: code)))
    }

    public static let unsupportedProtocol = CurlError(CURLE_UNSUPPORTED_PROTOCOL)
    public static let malformedURL = CurlError(CURLE_URL_MALFORMAT)
    public static let couldNotResolveHost = CurlError(CURLE_COULDNT_RESOLVE_HOST)
    public static let couldNotConnect = CurlError(CURLE_COULDNT_CONNECT)
    public static let partialFile = CurlError(CURLE_PARTIAL_FILE)
    public static let writeError = CurlError(CURLE_WRITE_ERROR)
    public static let operationTimedOut = CurlError(CURLE_OPERATION_TIMEDOUT)
    public static let tooManyRedirects = CurlError(CURLE_TOO_MANY_REDIRECTS)
    public static let gotNothing = CurlError(CURLE_GOT_NOTHING)
    public static let sendError = CurlError(CURLE_SEND_ERROR)
    public static let receiveError = CurlError(CURLE_RECV_ERROR)
    public static let peerFailedVerification = CurlError(CURLE_PEER_FAILED_VERIFICATION)
    public static let sslConnectError = CurlError(CURLE_SSL_CONNECT_ERROR)
    public static let sslCACertBadFile = CurlError(CURLE_SSL_CACERT_BADFILE)
    public static let fileSizeExceeded = CurlError(CURLE_FILESIZE_EXCEEDED)
    public static let badContentEncoding = CurlError(CURLE_BAD_CONTENT_ENCODING)
    public static let fileCouldNotRead = CurlError(CURLE_FILE_COULDNT_READ_FILE)
    public static let http2Stream = CurlError(CURLE_HTTP2_STREAM)
    public static let aborted = CurlError(CURLE_ABORTED_BY_CALLBACK)

    public static func ~= (pattern: CurlError, value: any Error) -> Bool {
        (value as? CurlError) == pattern
    }
}
