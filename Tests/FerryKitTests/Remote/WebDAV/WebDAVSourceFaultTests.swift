import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// Bad answers from a fault-injection server (Tests/Servers/fault_server.py): each is a typed
/// error naming store and URL, and nothing reaches the sink before it.
@Suite("WebDAVSource against injected faults")
final class WebDAVSourceFaultTests {
    let server: TestServer

    init() throws {
        // Foundation's Process starts children with SIGTERM blocked, so a plain fault_server
        // never exits on terminate() and TestServer.stop() waits forever; unblock, then exec it.
        let script = TestServer.repositoryRoot.appendingPathComponent("Tests/Servers/fault_server.py").path
        let launcher = "import os, signal, sys; signal.pthread_sigmask(signal.SIG_SETMASK, []); os.execv(sys.executable, [sys.executable, sys.argv[1], '--port', '0'])"
        server = try TestServer(executable: "/usr/bin/env", arguments: ["python3", "-c", launcher, script])
    }

    deinit {
        server.stop()
    }

    func pass(_ path: String) throws -> CollectedPass {
        var options = WebDAVOptions(content: .addressBook)
        options.authentication = .basic(username: "ferry", password: Secret("hunter2", source: "test"))
        let store = StoreConfiguration(name: "contacts", url: server.baseURL + path, options: options, location: ConfigurationLocation(file: "t", line: 1))
        let run = SourceRun(store: store, plan: PassPlan(cursor: "some-token", reconcile: false))
        return try run.runToCompletion()
    }

    func expectNothingDelivered(_ pass: CollectedPass, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(pass.batches.isEmpty && pass.listed.isEmpty && pass.outcome == nil, sourceLocation: sourceLocation)
        #expect(pass.offLoopCalls == 0 && pass.callsAfterEnd == 0, sourceLocation: sourceLocation)
        #expect(pass.error.map { !String(describing: $0).contains("hunter2") } ?? true, sourceLocation: sourceLocation)
    }

    @Test func anHTMLPageWith200IsMalformed() throws {
        let pass = try pass("/html200/")
        let error = try #require(pass.error)
        #expect(error.kind == .malformedResponse)
        #expect(error.store == "contacts")
        #expect(error.url.hasSuffix("/html200/"))
        // Which request, and where in its body.
        #expect(error.position == "sync report 1, line 1 column 6", "\(error.position)")
        expectNothingDelivered(pass)
    }

    @Test func aTruncatedBodyIsATransportError() throws {
        let pass = try pass("/truncate/5000/")
        #expect(pass.error?.kind == .transport(.truncated))
        #expect(pass.error?.isRetryable == true)
        expectNothingDelivered(pass)
    }

    @Test func aResetConnectionIsATransportError() throws {
        let pass = try pass("/reset/")
        #expect(pass.error?.kind == .transport(.connection))
        expectNothingDelivered(pass)
    }

    @Test func serverErrorsAndRateLimits() throws {
        let failed = try pass("/status/500/")
        #expect(failed.error?.kind == .httpStatus(500))
        #expect(failed.error?.isRetryable == true)
        #expect(failed.error?.position == "sync report 1")
        expectNothingDelivered(failed)

        let limited = try pass("/status/429/")
        #expect(limited.error?.kind == .rateLimited)
        expectNothingDelivered(limited)
    }
}
