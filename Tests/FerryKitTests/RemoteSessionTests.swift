import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

@Suite("RemoteSession against a loopback server")
final class RemoteSessionTests {
    let server: TestServer

    init() throws {
        server = try TestServer.fault()
    }

    deinit {
        server.stop()
    }

    func configuration(_ adjust: (inout SessionConfiguration) -> Void = { _ in }) -> SessionConfiguration {
        var configuration = SessionConfiguration()
        adjust(&configuration)
        return configuration
    }

    @Test func streamsALargeBodyOnTheOwnersLoop() throws {
        let record = try RecordingFetch(url: server.baseURL + "/bytes/20000000").runToCompletion()
        #expect(record.error == nil)
        #expect(record.head?.status == 200)
        #expect(record.body.count == 20_000_000)
        #expect(record.chunks > 1)
        #expect(record.offLoopCallbacks == 0)
        #expect(record.events.first == "head" && record.events.last == "complete")
    }

    @Test func followsRedirectsUpToTheCap() throws {
        let followed = try RecordingFetch(url: server.baseURL + "/redirect/3").runToCompletion()
        #expect(followed.head?.status == 200)
        #expect(String(decoding: followed.body, as: UTF8.self) == "done\n")
        #expect(followed.head?.url.hasSuffix("/redirect/0") == true)

        let capped = try RecordingFetch(url: server.baseURL + "/redirect/8", configuration: configuration { $0.maxRedirects = 5 }).runToCompletion()
        #expect(capped.error?.kind == .tooManyRedirects)
    }

    @Test func refusesRedirectsToOtherProtocols() throws {
        let record = try RecordingFetch(url: server.baseURL + "/redirect-to?url=file:///etc/hostname").runToCompletion()
        #expect(record.error?.kind == .protocolNotAllowed)
        #expect(record.body.isEmpty)
    }

    @Test func totalTimeout() throws {
        let record = try RecordingFetch(url: server.baseURL + "/stall-headers?seconds=10", configuration: configuration { $0.totalTimeout = 1 }).runToCompletion()
        #expect(record.error?.kind == .totalTimeout)
    }

    @Test func lowSpeedLimitCatchesAStall() throws {
        let record = try RecordingFetch(url: server.baseURL + "/stall?after=1000&seconds=10", configuration: configuration {
            $0.lowSpeedLimit = 100
            $0.lowSpeedTime = 1
        }).runToCompletion()
        #expect(record.error?.kind == .stalled)
        #expect(record.offLoopCallbacks == 0)
    }

    @Test func connectTimeoutAgainstAFullListenBacklog() throws {
        let blackhole = try ListenBacklogBlackhole()
        defer { blackhole.close() }
        let record = try RecordingFetch(url: "http://127.0.0.1:\(blackhole.port)/", configuration: configuration { $0.connectTimeout = 1 }).runToCompletion()
        #expect(record.error?.kind == .connectTimeout)
    }

    @Test func cancelMidBodyDeliversNothingAfterwards() throws {
        let fetch = RecordingFetch(url: server.baseURL + "/chunked/50000000?chunk=65536&delay_ms=2")
        fetch.cancelAfterBytes = 200_000
        let record = try fetch.runToCompletion()
        #expect(record.body.count >= 200_000)
        #expect(record.body.count < 50_000_000)
        #expect(record.callbacksAfterCancel == 0)
        #expect(record.metrics == nil && record.error == nil)
    }

    @Test func truncatedBodyIsAnError() throws {
        let record = try RecordingFetch(url: server.baseURL + "/truncate/100000?send=5000").runToCompletion()
        #expect(record.error?.kind == .truncated)
    }

    @Test func connectionResetIsAnError() throws {
        let record = try RecordingFetch(url: server.baseURL + "/reset").runToCompletion()
        #expect(record.error?.kind == .connection)
    }

    @Test func oversizedBodiesAreRefused() throws {
        let limited = configuration { $0.maxResponseBytes = 1_000_000 }
        let declared = try RecordingFetch(url: server.baseURL + "/bytes/5000000", configuration: limited).runToCompletion()
        #expect(declared.error?.kind == .responseTooLarge)
        let chunked = try RecordingFetch(url: server.baseURL + "/chunked/5000000", configuration: limited).runToCompletion()
        #expect(chunked.error?.kind == .responseTooLarge)
        #expect(chunked.body.count <= 1_000_000)
    }

    @Test func acceptsCompressedResponses() throws {
        let record = try RecordingFetch(url: server.baseURL + "/gzip/100000").runToCompletion()
        #expect(record.head?.headers["Content-Encoding"] == "gzip")
        #expect(record.body.count == 100_000)
    }

    @Test func reusesTheConnectionAcrossRequests() throws {
        let requests = (0..<20).map { _ in HTTPRequest(url: server.baseURL + "/small") }
        _ = try server.control("/stats/reset")
        let record = try RecordingFetch(requests).runToCompletion()
        #expect(record.error == nil)
        let stats = try JSONSerialization.jsonObject(with: server.control("/stats")) as! [String: Any]
        // The server counts connections when it accepts them: one for the 20 requests, and one
        // for the curl command line asking for these stats.
        #expect(stats["connections"] as? Int == 2)
        #expect((stats["paths"] as? [String: Int])?["/small"] == 20)
    }

    @Test func sendsMethodHeadersAndBody() throws {
        var request = HTTPRequest(method: "REPORT", url: server.baseURL + "/echo", body: Data("<sync/>".utf8))
        request.headers.add("Depth", "1")
        let record = try RecordingFetch([request]).runToCompletion()
        let echo = try JSONSerialization.jsonObject(with: record.body) as! [String: Any]
        #expect(echo["method"] as? String == "REPORT")
        #expect(echo["body"] as? String == "<sync/>")
        #expect((echo["headers"] as? [String: String])?["depth"] == "1")
    }

    @Test func slowOwnerPausesTheTransferInsteadOfBuffering() throws {
        let fetch = RecordingFetch(url: server.baseURL + "/bytes/8000000", configuration: configuration { $0.bufferLimit = 256 * 1024 })
        fetch.consumeDelay = 0.01
        let record = try fetch.runToCompletion()
        #expect(record.error == nil)
        #expect(record.body.count == 8_000_000)
        // The buffer stops growing at the limit plus at most one curl write (512 KiB buffer).
        #expect(record.largestChunk <= 256 * 1024 + 512 * 1024)
    }

    /// An owner handing the body to another thread (a streaming parser) holds the transfer
    /// while that thread is behind: nothing past what was already buffered arrives until it
    /// resumes, and then the body completes whole.
    @Test func suspendedTransferReadsNothingUntilResumed() throws {
        let fetch = RecordingFetch(url: server.baseURL + "/bytes/8000000", configuration: configuration { $0.bufferLimit = 256 * 1024 })
        fetch.suspendAfterBytes = 1
        fetch.suspension = 0.5
        let record = try fetch.runToCompletion()
        #expect(record.error == nil)
        #expect(record.body.count == 8_000_000)
        #expect(record.events.contains("resume"))
        // At most what the I/O thread had buffered, plus one curl write (512 KiB buffer); over
        // 0.5 s an unheld transfer on loopback would have delivered all 8 MB.
        #expect(record.bytesWhileSuspended <= 256 * 1024 + 512 * 1024, "\(record.bytesWhileSuspended) bytes arrived while suspended")
        #expect(record.offLoopCallbacks == 0)
        // The suspension held back most of the body: it arrived after the resume.
        let resumed = try #require(record.events.firstIndex(of: "resume"))
        #expect(record.events[resumed...].filter { $0 == "data" }.count > 1)
        #expect(record.events.last == "complete")
    }

    @Test func statusesAreResponsesNotErrors() throws {
        let record = try RecordingFetch(url: server.baseURL + "/status/503?retry_after=7").runToCompletion()
        #expect(record.error == nil)
        #expect(record.head?.status == 503)
        #expect(record.head?.headers["retry-after"] == "7")
    }

    @Test func malformedURLThrowsAtStart() throws {
        let record = try RecordingFetch(url: "http://[::1").runToCompletion()
        #expect(record.error != nil)
    }
}

/// A listening socket whose backlog is full, so further connects hang until they time out.
final class ListenBacklogBlackhole {
    let port: Int
    private var descriptors: [Int32] = []

    init() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } }
        listen(listener, 0)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
        port = Int(UInt16(bigEndian: address.sin_port))
        descriptors.append(listener)
        // Fill the accept queue (backlog 0 still admits one or two) with non-blocking connects.
        for _ in 0..<4 {
            let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, length) } }
            descriptors.append(client)
        }
        usleep(100_000)
    }

    func close() {
        descriptors.forEach { _ = Glibc.close($0) }
        descriptors.removeAll()
    }
}
