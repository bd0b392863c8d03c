import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// One version everywhere: what `--version`, the user agent and the journal say is the
/// Debian package's upstream version.
@Suite struct VersionTests {
    @Test func thePackageVersionIsFerrysVersion() throws {
        let changelog = try String(contentsOf: TestServer.repositoryRoot.appendingPathComponent("debian/changelog"), encoding: .utf8)
        let first = try #require(changelog.split(separator: "\n").first)
        // ferry (0.3.0-1) unstable; urgency=medium
        let version = try #require(first.split(separator: "(").dropFirst().first?.split(separator: ")").first)
        #expect(version.split(separator: "-").first.map(String.init) == FerryVersion.current)
    }
}
