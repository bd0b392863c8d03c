import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

@Suite("RemoteSession over TLS")
struct TLSSessionTests {
    /// A self-signed certificate for 127.0.0.1, made with openssl for this test run.
    static func makeCertificate() throws -> (cert: String, key: String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let cert = directory.appendingPathComponent("cert.pem").path
        let key = directory.appendingPathComponent("key.pem").path
        try Shell.run("/usr/bin/openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                                           "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                                           "-keyout", key, "-out", cert])
        return (cert, key)
    }

    @Test func selfSignedCertificateIsRefusedUnlessItsCAIsConfigured() throws {
        let tls = try Self.makeCertificate()
        let server = try TestServer.fault(tls: tls)
        defer { server.stop() }
        let url = "https://127.0.0.1:\(server.port)/small"

        let refused = try RecordingFetch(url: url).runToCompletion()
        #expect(refused.error?.kind == .tls)
        #expect(refused.head == nil)

        var trusting = SessionConfiguration()
        trusting.caFile = tls.cert
        let accepted = try RecordingFetch(url: url, configuration: trusting).runToCompletion()
        #expect(accepted.error == nil)
        #expect(String(decoding: accepted.body, as: UTF8.self) == "ok\n")
    }
}
