import CCurl
import Foundation
import Synchronization

/// One request in flight: a curl easy handle plus the buffers shared by the I/O thread, which
/// fills them from libcurl's callbacks, and the owner's run loop, which drains them.
///
/// Events are batched: at most one delivery block is pending on the owner's loop per transfer,
/// whatever the number of curl callbacks, and the transfer pauses (`CURL_WRITEFUNC_PAUSE`) while
/// more than `bufferLimit` bytes wait for the owner, or while the owner holds it (``hold()``).
final class CurlTransfer: @unchecked Sendable {
    /// What the owner receives in one delivery, in this order.
    struct Delivery {
        var head: ResponseHead?
        var body: Data
        var completion: Result<TransferMetrics, TransferError>?
        var resumeNeeded: Bool
    }

    private struct Shared {
        var head: ResponseHead?
        var headTaken = false
        var body = Data()
        var completion: Result<TransferMetrics, TransferError>?
        var deliveryScheduled = false
        var paused = false
        /// The owner asked for no more body bytes until it releases the transfer.
        var held = false
        var cancelled = false
    }

    let easy: UnsafeMutableRawPointer
    let request: HTTPRequest
    private let owner: RunLoopHandle
    /// The owner thread's tally when the transfer was made (a pass's), told what it moved.
    private let tally: TransferTally?
    private let bufferLimit: Int
    private let maxResponseBytes: Int64
    private let shared = Mutex(Shared())
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)

    // Touched only on the I/O thread.
    private var receivedHeaders = HTTPHeaders()
    private var receivedBytes: Int64 = 0
    private var exceededMaximum = false

    /// Called on the owner's loop with each batch of events.
    var deliver: ((Delivery) -> Void)?

    init(request: HTTPRequest, configuration: SessionConfiguration, owner: RunLoopHandle) throws(TransferError) {
        _ = Curl.initialized
        guard let easy = curl_easy_init() else {
            preconditionFailure("curl_easy_init returned NULL: out of memory")
        }
        self.easy = easy
        self.request = request
        self.owner = owner
        self.tally = TransferTally.installed
        self.bufferLimit = configuration.bufferLimit
        self.maxResponseBytes = configuration.maxResponseBytes
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        do {
            try configure(configuration)
        } catch {
            throw TransferError(kind: .invalidURL, url: request.url.redactingUserInfo, curl: error,
                                detail: "cannot use this request: \(error)")
        }
    }

    deinit {
        curl_easy_cleanup(easy)
        curl_slist_free_all(headerList)
        errorBuffer.deallocate()
    }

    private func configure(_ configuration: SessionConfiguration) throws(CurlError) {
        let protocols = configuration.allowedProtocols.sorted().joined(separator: ",")
        try Curl.setopt(easy, CURLOPT_URL, request.url)
        try Curl.setopt(easy, CURLOPT_PROTOCOLS_STR, protocols)
        try Curl.setopt(easy, CURLOPT_NOSIGNAL, true)
        // Redirects are followed by the session, one transfer per hop (``RedirectPolicy``).
        try Curl.setopt(easy, CURLOPT_FOLLOWLOCATION, false)
        try Curl.setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, Int(configuration.connectTimeout * 1000))
        try Curl.setopt(easy, CURLOPT_TIMEOUT_MS, Int(configuration.totalTimeout * 1000))
        try Curl.setopt(easy, CURLOPT_LOW_SPEED_LIMIT, configuration.lowSpeedLimit)
        try Curl.setopt(easy, CURLOPT_LOW_SPEED_TIME, configuration.lowSpeedTime)
        try Curl.setopt(easy, CURLOPT_MAXFILESIZE_LARGE, large: configuration.maxResponseBytes)
        // The empty string asks for every encoding this libcurl can decode.
        try Curl.setopt(easy, CURLOPT_ACCEPT_ENCODING, "")
        try Curl.setopt(easy, CURLOPT_SSL_VERIFYPEER, true)
        try Curl.setopt(easy, CURLOPT_SSL_VERIFYHOST, 2)
        if let caFile = configuration.caFile {
            try Curl.setopt(easy, CURLOPT_CAINFO, caFile)
        }
        try Curl.setopt(easy, CURLOPT_USERAGENT, configuration.userAgent)
        try Curl.setopt(easy, CURLOPT_BUFFERSIZE, 512 * 1024)
        // libcurl sends a request again, once and silently, when a reused connection dies
        // before any byte of the answer (a server closing an idle keep-alive connection as the
        // request leaves, or an answer lost after the server acted): harmless for an
        // idempotent method, a second record for a POST. Those take a connection of their own,
        // which libcurl never retries; the push then looks up what the lost send made.
        if !request.isIdempotent { try Curl.setopt(easy, CURLOPT_FRESH_CONNECT, true) }
        try Curl.check(ferry_curl_setopt_pointer(easy, CURLOPT_ERRORBUFFER, errorBuffer))

        switch request.method {
        case "GET":
            break
        case "HEAD":
            try Curl.setopt(easy, CURLOPT_NOBODY, true)
        default:
            try Curl.setopt(easy, CURLOPT_CUSTOMREQUEST, request.method)
        }
        if let body = request.body {
            try Curl.setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, large: Int64(body.count))
            // COPYPOSTFIELDS copies, so the Data need not outlive this call.
            let code = body.withUnsafeBytes { raw in
                ferry_curl_setopt_pointer(easy, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!))
            }
            try Curl.check(code)
        }
        for (name, value) in request.headers {
            headerList = curl_slist_append(headerList, "\(name): \(value)")
        }
        if request.body != nil && request.headers["Expect"] == nil {
            // A 100-continue round trip per request costs a whole RTT on every DAV REPORT.
            headerList = curl_slist_append(headerList, "Expect:")
        }
        if let headerList {
            try Curl.check(ferry_curl_setopt_slist(easy, CURLOPT_HTTPHEADER, headerList))
        }

        let context = Unmanaged.passUnretained(self).toOpaque()
        try Curl.check(ferry_curl_setopt_write_function(easy, CURLOPT_WRITEFUNCTION) { data, size, count, context in
            Unmanaged<CurlTransfer>.fromOpaque(context!).takeUnretainedValue().received(body: data!, count: size * count)
        })
        try Curl.check(ferry_curl_setopt_pointer(easy, CURLOPT_WRITEDATA, context))
        try Curl.check(ferry_curl_setopt_write_function(easy, CURLOPT_HEADERFUNCTION) { data, size, count, context in
            Unmanaged<CurlTransfer>.fromOpaque(context!).takeUnretainedValue().received(header: data!, count: size * count)
        })
        try Curl.check(ferry_curl_setopt_pointer(easy, CURLOPT_HEADERDATA, context))
    }

    // MARK: - I/O thread

    private func received(header data: UnsafeMutablePointer<CChar>, count: Int) -> Int {
        // Parsed from the bytes straight into fields: per line Strings and Foundation's trimming
        // showed up in the small-request benchmark's profile.
        let line = UnsafeRawBufferPointer(start: data, count: count)[...]
        if line.starts(with: "HTTP/".utf8) {
            // A new status line: after an interim 100, or a proxy's CONNECT answer.
            receivedHeaders = HTTPHeaders()
            return count
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return count }
        let name = Self.trimmed(line[..<colon])
        let value = Self.trimmed(line[(colon + 1)...])
        receivedHeaders.add(String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self))
        return count
    }

    /// Without surrounding spaces, tabs and line breaks (HTTP's optional white space and the
    /// header line's CRLF).
    private static func trimmed(_ bytes: Slice<UnsafeRawBufferPointer>) -> Slice<UnsafeRawBufferPointer> {
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D || $0 == 0x0A }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) }) else { return bytes[bytes.startIndex..<bytes.startIndex] }
        return bytes[first...last]
    }

    private func received(body data: UnsafeMutablePointer<CChar>, count: Int) -> Int {
        receivedBytes += Int64(count)
        if receivedBytes > maxResponseBytes {
            exceededMaximum = true
            return 0
        }
        let head = makeHeadIfNeeded()
        var post = false
        let accepted: Bool = shared.withLock { shared in
            if shared.cancelled { return true }
            if shared.held || shared.body.count >= bufferLimit {
                // curl keeps these bytes and offers them again once resumed.
                shared.paused = true
                return false
            }
            if shared.head == nil && !shared.headTaken { shared.head = head }
            shared.body.append(UnsafeRawPointer(data).assumingMemoryBound(to: UInt8.self), count: count)
            if !shared.deliveryScheduled {
                shared.deliveryScheduled = true
                post = true
            }
            return true
        }
        if !accepted {
            receivedBytes -= Int64(count)
            return ferry_curl_writefunc_pause()
        }
        if post { scheduleDelivery() }
        return count
    }

    private var builtHead: ResponseHead?

    private func makeHeadIfNeeded() -> ResponseHead {
        if let builtHead { return builtHead }
        var status = Curl.info(easy, long: CURLINFO_RESPONSE_CODE)
        if status == 0 && request.url.hasPrefix("file:") {
            status = 200
        }
        let head = ResponseHead(status: status, headers: receivedHeaders, url: request.url.redactingUserInfo)
        builtHead = head
        return head
    }

    /// Called on the I/O thread once libcurl is done with the transfer.
    func complete(code: CURLcode) {
        if let tally {
            let received = Int64(Curl.info(easy, long: CURLINFO_HEADER_SIZE)) + receivedBytes
            let sent = Int64(Curl.info(easy, long: CURLINFO_REQUEST_SIZE)) + Curl.info(easy, offset: CURLINFO_SIZE_UPLOAD_T)
            tally.add(received: received, sent: sent)
        }
        let outcome: Result<TransferMetrics, TransferError>
        if code == CURLE_OK {
            outcome = .success(TransferMetrics(
                status: makeHeadIfNeeded().status,
                bodyBytes: receivedBytes,
                totalTime: Double(Curl.info(easy, offset: CURLINFO_TOTAL_TIME_T)) / 1_000_000,
                newConnections: Curl.info(easy, long: CURLINFO_NUM_CONNECTS)))
        } else {
            outcome = .failure(transferError(for: code))
        }
        let head = code == CURLE_OK ? makeHeadIfNeeded() : nil
        let post: Bool = shared.withLock { shared in
            if shared.head == nil && !shared.headTaken { shared.head = head }
            shared.completion = outcome
            defer { shared.deliveryScheduled = true }
            return !shared.deliveryScheduled
        }
        if post { scheduleDelivery() }
    }

    private func transferError(for code: CURLcode) -> TransferError {
        let curl = CurlError(code)
        let message = String(cString: errorBuffer)
        let detail = message.isEmpty ? curl.description : message
        let url = request.url.redactingUserInfo
        let kind: TransferError.Kind
        switch code {
        case CURLE_OPERATION_TIMEDOUT:
            if message.contains("too slow") {
                kind = .stalled
            } else if message.contains("onnection timed out") || message.contains("connect") && Curl.info(easy, offset: CURLINFO_CONNECT_TIME_T) == 0 {
                kind = .connectTimeout
            } else {
                kind = .totalTimeout
            }
        case CURLE_WRITE_ERROR where exceededMaximum, CURLE_FILESIZE_EXCEEDED:
            kind = .responseTooLarge
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CONNECT_ERROR, CURLE_SSL_CACERT_BADFILE,
             CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH:
            kind = .tls
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            kind = .nameResolution
        case CURLE_COULDNT_CONNECT, CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING:
            kind = .connection
        case CURLE_PARTIAL_FILE, CURLE_HTTP2_STREAM, CURLE_BAD_CONTENT_ENCODING:
            kind = .truncated
        case CURLE_UNSUPPORTED_PROTOCOL:
            kind = .protocolNotAllowed
        case CURLE_URL_MALFORMAT:
            kind = .invalidURL
        case CURLE_FILE_COULDNT_READ_FILE, CURLE_READ_ERROR:
            kind = .fileNotReadable
        default:
            kind = .other
        }
        return TransferError(kind: kind, url: url, curl: curl, detail: detail)
    }

    /// Called on the I/O thread when events wait for the owner. The I/O thread posts them once
    /// its pass over libcurl is done (``postDelivery()``), so a small response's head, body
    /// and completion, which usually arrive in one pass, cost the owner one wake-up, not two.
    private func scheduleDelivery() {
        CurlIOThread.shared.deliverAfterThisPass(self)
    }

    /// Posts the pending events to the owner's loop (I/O thread, end of a pass).
    func postDelivery() {
        owner.perform { [self] in
            self.deliverPending()
        }
    }

    // MARK: - Owner's thread

    private func deliverPending() {
        let delivery: Delivery? = shared.withLock { shared in
            shared.deliveryScheduled = false
            if shared.cancelled { return nil }
            var head: ResponseHead?
            if !shared.headTaken, let pending = shared.head {
                head = pending
                shared.headTaken = true
            }
            let body = shared.body
            shared.body = Data()
            // A held transfer stays paused until the owner releases it.
            let resume = shared.paused && !shared.held
            if resume { shared.paused = false }
            let completion = shared.completion
            if completion != nil { shared.cancelled = true }   // nothing may follow a completion
            return Delivery(head: head, body: body, completion: completion, resumeNeeded: resume)
        }
        guard let delivery else { return }
        deliver?(delivery)
    }

    /// Asks for no more body bytes: the next write from libcurl pauses the transfer. Bytes
    /// already buffered for the owner are still delivered.
    ///
    /// `held` is a level, read by the write callback under the same lock: a ``release()`` that
    /// comes before libcurl's next write means that write is accepted, one that comes after
    /// finds `paused` set and resumes the transfer. Either way the last call wins.
    func hold() {
        shared.withLock { $0.held = true }
    }

    /// Ends a ``hold()``. Returns true when the transfer had paused and must be resumed on the
    /// I/O thread (which applies the resume after the write callback that paused has returned:
    /// both run there).
    func release() -> Bool {
        shared.withLock { shared in
            shared.held = false
            guard shared.paused, !shared.cancelled else { return false }
            shared.paused = false
            return true
        }
    }

    /// Stops deliveries at once (the caller is on the owner's loop, where deliveries run).
    /// Returns false when the transfer had already delivered its completion.
    func markCancelled() -> Bool {
        shared.withLock { shared in
            defer { shared.cancelled = true }
            return !shared.cancelled
        }
    }
}
