import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// Per-response string work moved to bytes for the small-request benchmark (URL redaction,
/// header-name comparison). The earlier implementations are the references.
@Suite struct TransportFastPathTests {
    typealias Generator = WebDAVFuzzTests.Generator

    enum Reference {
        static func redactingUserInfo(_ url: String) -> String {
            guard let scheme = url.range(of: "://"),
                  let at = url[scheme.upperBound...].firstIndex(of: "@") else { return url }
            let authorityEnd = url[scheme.upperBound...].firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? url.endIndex
            guard at < authorityEnd else { return url }
            return String(url[..<scheme.upperBound]) + "REDACTED@" + String(url[url.index(after: at)...])
        }

        static func caseInsensitiveEquals(_ a: String, _ b: String) -> Bool {
            a.utf8.count == b.utf8.count && a.lowercased() == b.lowercased()
        }
    }

    static func text(_ random: inout Generator, _ pieces: [String], _ length: ClosedRange<Int>) -> String {
        (0..<Int.random(in: length, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined()
    }

    @Test func redactionMatchesTheReference() {
        var random = Generator(state: WebDAVFuzzTests.seed ^ 0x4ED)
        let pieces = ["https", "http", ":", "//", "://", "@", "user", "pass", "host", ":8080", "/", "?", "#", "a@b", "é", "x"]
        for _ in 0..<5_000 {
            let url = Self.text(&random, pieces, 0...10)
            #expect(url.redactingUserInfo == Reference.redactingUserInfo(url), "\(url.debugDescription)")
        }
        #expect("https://ann:s3cret@dav.example/book/".redactingUserInfo == "https://REDACTED@dav.example/book/")
        #expect("https://dav.example/a@b".redactingUserInfo == "https://dav.example/a@b")
    }

    @Test func headerNamesCompareLikeTheReference() {
        var random = Generator(state: WebDAVFuzzTests.seed ^ 0xCA5E)
        let pieces = ["a", "A", "z", "Z", "-", "@", "[", "`", "{", "_", "1", "é", "É", "ß", "K", "\u{212A}"]
        for _ in 0..<20_000 {
            let a = Self.text(&random, pieces, 0...4)
            let b = Bool.random(using: &random) ? Self.text(&random, pieces, 0...4) : a.uppercased()
            #expect(a.caseInsensitiveEquals(b) == Reference.caseInsensitiveEquals(a, b), "\(a.debugDescription) vs \(b.debugDescription)")
        }
        var headers = HTTPHeaders()
        headers.add("ETag", "\"1\"")
        #expect(headers["etag"] == "\"1\"" && headers["ETAG"] == "\"1\"" && headers["Etag-x"] == nil)
    }
}
