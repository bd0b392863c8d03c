import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// Seeded random-mutation fuzzing of the multistatus parser and the vCard/iCalendar field
/// extractor: whatever the input, no crash, and a failure is always the typed error.
///
/// A short run in every test pass; a longer one with `FERRY_FUZZ_ITERATIONS=200000 swift test
/// --filter WebDAVFuzz` (add `FERRY_FUZZ_SEED=n` to replay a run). Each failing input is
/// printed with its seed and iteration so it can become a regression test.
@Suite("WebDAV fuzzing")
struct WebDAVFuzzTests {
    static var iterations: Int {
        ProcessInfo.processInfo.environment["FERRY_FUZZ_ITERATIONS"].flatMap(Int.init) ?? 400
    }

    static var seed: UInt64 {
        ProcessInfo.processInfo.environment["FERRY_FUZZ_SEED"].flatMap(UInt64.init) ?? 0x5EED_F00D
    }

    static let multistatusCorpus = [
        #"<?xml version='1.0' encoding='utf-8'?><multistatus xmlns="DAV:"><sync-token>http://radicale.org/ns/sync/5a06</sync-token><response><href>/ferry/contacts/card-0.vcf</href><propstat><prop><getetag>"583f"</getetag></prop><status>HTTP/1.1 200 OK</status></propstat></response><response><href>/ferry/contacts/gone.vcf</href><status>HTTP/1.1 404 Not Found</status></response></multistatus>"#,
        #"<ns0:multistatus xmlns:ns0="DAV:"><ns0:response><ns0:href>/user/contacts/addressbook/card-0.vcf</ns0:href><ns0:propstat><ns0:status>HTTP/1.1 200 OK</ns0:status><ns0:prop><ns0:getetag>"b606"</ns0:getetag></ns0:prop></ns0:propstat></ns0:response><ns0:sync-token>04b5f13f</ns0:sync-token></ns0:multistatus>"#,
        #"<multistatus xmlns="DAV:" xmlns:CR="urn:ietf:params:xml:ns:carddav"><response><href>/b/1.vcf</href><propstat><prop><getetag>"e1"</getetag><CR:address-data>BEGIN:VCARD&#13;&#10;UID:1&#13;&#10;END:VCARD&#13;&#10;</CR:address-data></prop><status>HTTP/1.1 200 OK</status></propstat></response></multistatus>"#,
        #"<x:multistatus xmlns:x="DAV:" xmlns:cal="urn:ietf:params:xml:ns:caldav"><x:response><x:href>/c/e.ics</x:href><x:propstat><x:prop><x:getetag>"e2"</x:getetag><cal:calendar-data><![CDATA[BEGIN:VCALENDAR]]></cal:calendar-data></x:prop><x:status>HTTP/1.1 200 OK</x:status></x:propstat></x:response></x:multistatus>"#,
        #"<D:multistatus xmlns:D="DAV:"><D:response><D:href>/b/</D:href><D:status>HTTP/1.1 507 Insufficient Storage</D:status><D:error><D:number-of-matches-within-limits/></D:error></D:response><D:sync-token>t2</D:sync-token></D:multistatus>"#,
        #"<?xml version='1.0' encoding='utf-8'?><error xmlns="DAV:"><valid-sync-token /></error>"#,
    ]

    static let cardCorpus = [
        "BEGIN:VCARD\r\nVERSION:3.0\r\nUID:urn:uuid:42\r\nFN:Ann\r\n  Example\r\nEMAIL;TYPE=work:ann@work.example\r\nitem1.EMAIL;TYPE=\"home,pref\":ann@home.example\r\nTEL:+1\r\nORG:Acme\\, Inc.;Sales\r\nEND:VCARD\r\n",
        "BEGIN:VCALENDAR\nBEGIN:VTIMEZONE\nTZID:X\nEND:VTIMEZONE\nBEGIN:VEVENT\nUID:e\nSUMMARY:a\\;b\nDTSTART;TZID=X:20240101T100000\nRRULE:FREQ=DAILY\nBEGIN:VALARM\nEND:VALARM\nEND:VEVENT\nEND:VCALENDAR\n",
    ]

    /// Fragments that tend to reach interesting states.
    static let tokens: [[UInt8]] = [
        "<", ">", "</", "/>", "&", "&amp;", "&#0;", "&#xD800;", "]]>", "<![CDATA[", "<!--", "-->", "\"", "'",
        "<D:response>", "</D:response>", "<D:href>", "</D:href>", "<D:status>HTTP/1.1 999 X</D:status>",
        "xmlns:D=\"DAV:\"", "xmlns=\"\"", "<!DOCTYPE x [<!ENTITY a \"aaaaaaaa\">]>", "&a;",
        "\r\n", "\r\n ", "\n\t", ":", ";", ".", "=", "\\", "\\n", "BEGIN:VEVENT", "END:VEVENT", "BEGIN:", "END:",
    ].map { Array($0.utf8) } + [[0xFF], [0xC3], [0xE2, 0x82], [0x00], [0xF0, 0x9F, 0x98, 0x80]]

    /// SplitMix64: small, seedable, good enough for mutation choices.
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static func mutate(_ input: [UInt8], _ random: inout Generator) -> [UInt8] {
        var bytes = input
        for _ in 0..<Int.random(in: 1...3, using: &random) {
            let position = bytes.isEmpty ? 0 : Int.random(in: 0...bytes.count, using: &random)
            switch Int.random(in: 0..<12, using: &random) {
            case 0 where position < bytes.count:
                bytes[position] ^= UInt8(1 << Int.random(in: 0..<8, using: &random))
            case 1:
                bytes.insert(contentsOf: tokens.randomElement(using: &random)!, at: position)
            case 2 where position < bytes.count:
                let length = Int.random(in: 1...min(64, bytes.count - position), using: &random)
                bytes.removeSubrange(position..<position + length)
            case 3 where position < bytes.count:
                let length = Int.random(in: 1...min(128, bytes.count - position), using: &random)
                bytes.insert(contentsOf: bytes[position..<position + length], at: position)
            case 4 where Bool.random(using: &random):
                bytes = Array(bytes.prefix(position))
            default:
                bytes.insert(UInt8.random(in: 0...255, using: &random), at: position)
            }
        }
        return bytes
    }

    @Test func multistatusParserNeverCrashesAndFailsTyped() {
        var random = Generator(state: Self.seed)
        let parser = MultistatusParser(maxDataBytes: 256, maxTextBytes: 512)
        var parsed = 0
        var failed = 0
        for iteration in 0..<Self.iterations {
            let seedInput = Array(Self.multistatusCorpus.randomElement(using: &random)!.utf8)
            let input = Self.mutate(seedInput, &random)
            do {
                let status = try parser.parse(Data(input))
                parsed += 1
                // What a successful parse returns is consistent.
                #expect(status.root == "multistatus" || status.root == "error", "iteration \(iteration)")
                for (index, response) in status.responses.enumerated() {
                    #expect(response.position == index)
                    #expect((response.data?.utf8.count ?? 0) <= 256)
                    #expect(!(response.dataTooLarge && response.data != nil))
                }
            } catch {
                // The typed error, with a position.
                failed += 1
                #expect(error.line >= 0 && error.column >= 0)
            }
        }
        #expect(parsed + failed == Self.iterations)
        print("multistatus fuzz: seed \(Self.seed), \(Self.iterations) inputs, \(parsed) parsed, \(failed) rejected")
    }

    @Test func fieldExtractorNeverCrashesAndOnlyRejectsInvalidUTF8() {
        var random = Generator(state: Self.seed ^ 0xCA4D)
        var rejected = 0
        for iteration in 0..<Self.iterations {
            let seedInput = Array(Self.cardCorpus.randomElement(using: &random)!.utf8)
            let input = Data(Self.mutate(seedInput, &random))
            let valid = String(validating: input, as: UTF8.self) != nil
            for kind in [StoreKind.carddav, .caldav] {
                do {
                    let fields = try CardFieldExtractor.fields(of: input, kind: kind)
                    #expect(valid, "iteration \(iteration): invalid UTF-8 accepted")
                    let allowed: Set<String> = kind == .carddav
                        ? ["UID", "FN", "EMAIL", "TEL", "ORG"]
                        : ["UID", "SUMMARY", "DTSTART", "DTEND", "RRULE", "DTSTART_TZID", "DTEND_TZID"]
                    #expect(Set(fields.keys).isSubset(of: allowed))
                } catch {
                    #expect(error == .invalidUTF8)
                    #expect(!valid, "iteration \(iteration): valid UTF-8 rejected")
                    rejected += 1
                }
            }
        }
        print("field extractor fuzz: seed \(Self.seed), \(Self.iterations) inputs, \(rejected / 2) invalid UTF-8")
    }

    /// Regression (found by this harness): an element prefix that is not UTF-8 made
    /// swift-corelibs' XMLParser trap; the parser now refuses non-UTF-8 bodies first.
    @Test func nonUTF8ElementNameIsATypedFailure() {
        var body = Array(#"<multistatus xmlns="DAV:"><"#.utf8)
        body += [0x65, 0xF2, 0x72, 0xE6, 0x6F, 0x72] + Array(#":x xmlns:"#.utf8) + [0x65, 0xF2, 0x72, 0xE6, 0x6F, 0x72]
        body += Array(#"="DAV:"/></multistatus>"#.utf8)
        let error = #expect(throws: MultistatusParser.Failure.self) {
            try MultistatusParser(maxDataBytes: 100).parse(Data(body))
        }
        #expect(error?.line == 1)
        #expect(error?.column == 29)
    }

    /// Regression guard: entity expansion must not blow up memory or time ("billion laughs").
    @Test func entityExpansionIsBounded() {
        var doc = #"<?xml version="1.0"?><!DOCTYPE m [<!ENTITY a0 "laugh">"#
        for level in 1...12 {
            doc += "<!ENTITY a\(level) \"" + String(repeating: "&a\(level - 1);", count: 10) + "\">"
        }
        doc += #"]><multistatus xmlns="DAV:"><sync-token>&a12;</sync-token></multistatus>"#
        let result = Result { try MultistatusParser(maxDataBytes: 1 << 20).parse(Data(doc.utf8)) }
        switch result {
        case .success(let status):
            // Expanded text is capped like any other text.
            #expect((status.syncToken?.utf8.count ?? 0) <= 64 << 10)
        case .failure(let error):
            #expect(error is MultistatusParser.Failure)
        }
    }
}
