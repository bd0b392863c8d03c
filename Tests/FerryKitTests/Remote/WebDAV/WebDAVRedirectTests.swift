import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// A DAV store whose URL redirects, with nginx in front of Radicale and Xandikos as a real
/// deployment would have it: a collection that moved (301, 308) or answers elsewhere for now
/// (302, 307), an http URL upgraded to https, another origin, a downgrade. The REPORTs and
/// PROPFINDs keep their bodies, members keep the ids they have at the collection's real URL,
/// and credentials stay on the configured origin.
@Suite("WebDAV stores behind redirects", .serialized,
       .enabled(if: DAVServer.shouldRun, "radicale/xandikos not installed: pip install radicale xandikos into $FERRY_VENV"))
struct WebDAVRedirectTests {
    /// nginx with three server blocks before `dav`: `front` (http, ports[0]) redirects
    /// `/moved-STATUS/...` to the real collection path with that status, `/elsewhere/...` to
    /// the same path on `other` (ports[1], another origin), `/secure/...` to `tls` (ports[2],
    /// https) and proxies everything else; `other` proxies; `tls` proxies, and redirects
    /// `/downgrade/...` back to plain http.
    final class Front {
        let nginx: NginxServer
        let certificate: (cert: String, key: String)
        let dav: DAVServer

        init(_ dav: DAVServer) throws {
            self.dav = dav
            let certificate = try TLSSessionTests.makeCertificate()
            self.certificate = certificate
            let backend = dav.baseURL
            let real = dav.addressBookPath
            let started = try NginxServer.start(ports: 3, probe: "/") { ports in
                let proxy = "proxy_pass \(backend); proxy_set_header Host $http_host; proxy_http_version 1.1;"
                let moves = [301, 302, 307, 308].map { status in
                    "location ~ ^/moved-\(status)/book/(.*)$ { return \(status) \(real)$1; }"
                }.joined(separator: "\n")
                return """
                server {
                    listen 127.0.0.1:\(ports[0]);
                    absolute_redirect off;
                    \(moves)
                    location ~ ^/elsewhere/book/(.*)$ { return 307 http://127.0.0.1:\(ports[1])\(real)$1; }
                    location ~ ^/secure/book/(.*)$ { return 301 https://127.0.0.1:\(ports[2])\(real)$1; }
                    location / { \(proxy) }
                }
                server {
                    listen 127.0.0.1:\(ports[1]);
                    location / { \(proxy) }
                }
                server {
                    listen 127.0.0.1:\(ports[2]) ssl;
                    ssl_certificate \(certificate.cert);
                    ssl_certificate_key \(certificate.key);
                    location ~ ^/downgrade/book/(.*)$ { return 301 http://127.0.0.1:\(ports[0])\(real)$1; }
                    location / { \(proxy) }
                }
                """
            }
            guard let started else { throw TestServerError.didNotStart("nginx is not installed (apt install nginx-light)") }
            nginx = started
        }

        func url(_ path: String, https: Bool = false) -> String {
            https ? "https://127.0.0.1:\(nginx.ports[2])\(path)" : "http://127.0.0.1:\(nginx.ports[0])\(path)"
        }

        func store(_ url: String) -> StoreConfiguration {
            var store = dav.store(url: url)
            store.session.caFile = certificate.cert
            return store
        }

        deinit { nginx.stop() }
    }

    @Test(arguments: [DAVServer.Kind.radicale, .xandikos], [301, 302, 307, 308])
    func aRedirectedCollectionSyncsWithItsOwnIDs(_ kind: DAVServer.Kind, _ status: Int) throws {
        let dav = try DAVServer(kind, cards: 12, events: 0)
        defer { dav.stop() }
        let front = try Front(dav)
        let direct = try dav.pass(dav.store(), cursor: nil)
        let store = front.store(front.url("/moved-\(status)/book/"))

        let first = try dav.pass(store, cursor: nil)
        #expect(first.error == nil, "\(String(describing: first.error))")
        #expect(Set(first.upserts.keys) == Set(direct.upserts.keys), "ids as at the real URL")
        #expect(first.upserts.count == 12 && first.problems.isEmpty)
        let token = try #require(first.finalCursor)

        // Incremental passes go through the redirect too, and name new members the same way.
        try dav.put(dav.addressBookPath + "added.vcf", DAVServer.vCard(uid: "added", name: "Added", email: "added@example.com"))
        try dav.delete(dav.addressBookPath + "card-3.vcf")
        let second = try dav.pass(store, cursor: token)
        #expect(second.error == nil, "\(String(describing: second.error))")
        #expect(second.upserts.keys.sorted() == ["added.vcf"])
        #expect(second.deletes == ["card-3.vcf"])
    }

    @Test func anotherOriginGetsNoCredentialsAndTheErrorSaysWhy() throws {
        let dav = try DAVServer.shared(.radicale)
        let front = try Front(dav)
        let pass = try dav.pass(front.store(front.url("/elsewhere/book/")), cursor: nil)
        let error = try #require(pass.error)
        #expect(error.kind == .unauthorized)
        #expect(error.message.contains("redirect") && error.message.contains("another origin"), "\(error.message)")
        #expect(pass.batches.isEmpty)
    }

    /// The usual trigger: an http URL the server upgrades to https. On another port it is
    /// another origin, so this works here for a server without authentication (Xandikos); on
    /// the default ports the credentials would follow.
    @Test func anHTTPURLUpgradedToHTTPSSyncs() throws {
        let dav = try DAVServer.shared(.xandikos)
        let front = try Front(dav)
        let direct = try dav.pass(dav.store(), cursor: nil)
        let pass = try dav.pass(front.store(front.url("/secure/book/")), cursor: nil)
        #expect(pass.error == nil, "\(String(describing: pass.error))")
        #expect(Set(pass.upserts.keys) == Set(direct.upserts.keys))
    }

    @Test func aDowngradeToHTTPIsRefused() throws {
        let dav = try DAVServer.shared(.xandikos)
        let front = try Front(dav)
        let pass = try dav.pass(front.store(front.url("/downgrade/book/", https: true)), cursor: nil)
        let error = try #require(pass.error)
        #expect(error.kind == .transport(.insecureRedirect), "\(error)")
        #expect(!error.isRetryable)
        #expect(pass.batches.isEmpty)
    }
}
