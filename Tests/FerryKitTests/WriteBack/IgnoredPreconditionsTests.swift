import Testing
@testable import FerryKit

/// Which servers a push reads before writing to under `read-before-write = auto`.
@Suite("Servers known to ignore preconditions")
struct IgnoredPreconditionsTests {
    @Test func knownByTheirServerHeader() {
        // SOGo's PROPFIND answer, as sogod 5.8 sends it.
        #expect(WebDAVWriter.ignoresPreconditions(server: "SOPE 4.9.37/WebDAV"))
        #expect(WebDAVWriter.ignoresPreconditions(server: "SOPE/5.0"))
        for other in ["nginx/1.22.1", "Apache/2.4.57 (Debian)", "Radicale", "xandikos", "PHP 8.2.7 Development Server", "SOPEX", ""] {
            #expect(!WebDAVWriter.ignoresPreconditions(server: other), "\(other)")
        }
        #expect(!WebDAVWriter.ignoresPreconditions(server: nil))
    }
}
