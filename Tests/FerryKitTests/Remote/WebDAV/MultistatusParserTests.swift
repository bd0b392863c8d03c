import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

@Suite("MultistatusParser")
struct MultistatusParserTests {
    let parser = MultistatusParser(maxDataBytes: 1 << 20)

    func parse(_ xml: String) throws -> Multistatus {
        try parser.parse(Data(xml.utf8))
    }

    /// Radicale's style: default namespace, token first, status after prop.
    @Test func radicaleStyleTokenFirstDefaultNamespace() throws {
        let status = try parse("""
        <?xml version='1.0' encoding='utf-8'?>
        <multistatus xmlns="DAV:"><sync-token>http://radicale.org/ns/sync/5a06</sync-token><response><href>/ferry/contacts/card-0.vcf</href><propstat><prop><getetag>"583f"</getetag></prop><status>HTTP/1.1 200 OK</status></propstat></response><response><href>/ferry/contacts/gone.vcf</href><status>HTTP/1.1 404 Not Found</status></response></multistatus>
        """)
        #expect(status.root == "multistatus")
        #expect(status.syncToken == "http://radicale.org/ns/sync/5a06")
        #expect(status.responses.count == 2)
        #expect(status.responses[0].href == "/ferry/contacts/card-0.vcf")
        #expect(status.responses[0].etag == "\"583f\"")
        #expect(status.responses[0].effectiveStatus == 200)
        #expect(status.responses[1].effectiveStatus == 404)
        #expect(status.responses[1].etag == nil)
        #expect(status.responses[1].position == 1)
        #expect(!status.isTruncated && !status.hasInvalidSyncToken)
    }

    /// Xandikos' style: ns0 prefix, status before prop, token last.
    @Test func xandikosStylePrefixedTokenLast() throws {
        let status = try parse("""
        <ns0:multistatus xmlns:ns0="DAV:"><ns0:response><ns0:href>/user/contacts/addressbook/card-0.vcf</ns0:href><ns0:propstat><ns0:status>HTTP/1.1 200 OK</ns0:status><ns0:prop><ns0:getetag>"b606"</ns0:getetag></ns0:prop></ns0:propstat></ns0:response><ns0:sync-token>04b5f13f</ns0:sync-token></ns0:multistatus>
        """)
        #expect(status.syncToken == "04b5f13f")
        #expect(status.responses.map(\.etag) == ["\"b606\""])
        #expect(status.responses[0].propstatStatus == 200)
    }

    @Test func multigetDataInBothNamespacesAndAnyPrefix() throws {
        let card = try parse("""
        <multistatus xmlns="DAV:" xmlns:CR="urn:ietf:params:xml:ns:carddav"><response><href>/b/nope.vcf</href><status>HTTP/1.1 404 Not Found</status></response><response><href>/b/1.vcf</href><propstat><prop><getetag>"e1"</getetag><CR:address-data>BEGIN:VCARD
        UID:1 &amp; more
        END:VCARD
        </CR:address-data></prop><status>HTTP/1.1 200 OK</status></propstat></response></multistatus>
        """)
        #expect(card.responses[1].data == "BEGIN:VCARD\nUID:1 & more\nEND:VCARD\n")
        #expect(card.responses[0].effectiveStatus == 404)

        let calendar = try parse("""
        <x:multistatus xmlns:x="DAV:" xmlns:cal="urn:ietf:params:xml:ns:caldav"><x:response><x:href>/c/e.ics</x:href><x:propstat><x:prop><x:getetag>"e2"</x:getetag><cal:calendar-data><![CDATA[BEGIN:VCALENDAR <raw>]]></cal:calendar-data></x:prop><x:status>HTTP/1.1 200 OK</x:status></x:propstat></x:response></x:multistatus>
        """)
        #expect(calendar.responses[0].data == "BEGIN:VCALENDAR <raw>")
    }

    @Test func dataInAForeignNamespaceIsIgnored() throws {
        let status = try parse("""
        <D:multistatus xmlns:D="DAV:" xmlns:X="urn:example"><D:response><D:href>/b/1.vcf</D:href><D:propstat><D:prop><D:getetag>"e"</D:getetag><X:address-data>nope</X:address-data></D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response></D:multistatus>
        """)
        #expect(status.responses[0].data == nil)
        #expect(status.responses[0].etag == "\"e\"")
    }

    @Test func propstatWith404DoesNotHideThe200() throws {
        let status = try parse("""
        <D:multistatus xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:carddav"><D:response><D:href>/b/1.vcf</D:href><D:propstat><D:prop><C:address-data/></D:prop><D:status>HTTP/1.1 404 Not Found</D:status></D:propstat><D:propstat><D:prop><D:getetag>"e"</D:getetag></D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response></D:multistatus>
        """)
        #expect(status.responses[0].effectiveStatus == 200)
        #expect(status.responses[0].etag == "\"e\"")
        #expect(status.responses[0].data == nil)
    }

    @Test func errorBodiesForInvalidTokens() throws {
        // Radicale (403) and Xandikos (412) both send a DAV:error root.
        let radicale = try parse(#"<?xml version='1.0' encoding='utf-8'?><error xmlns="DAV:"><valid-sync-token /></error>"#)
        #expect(radicale.root == "error")
        #expect(radicale.errors == [DAVName.validSyncToken])
        #expect(radicale.hasInvalidSyncToken)
        let xandikos = try parse(#"<ns0:error xmlns:ns0="DAV:"><ns0:valid-sync-token/></ns0:error>"#)
        #expect(xandikos.hasInvalidSyncToken)
    }

    @Test func truncationMarkers() throws {
        let status = try parse("""
        <D:multistatus xmlns:D="DAV:"><D:response><D:href>/b/1.vcf</D:href><D:propstat><D:prop><D:getetag>"1"</D:getetag></D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response><D:response><D:href>/b/</D:href><D:status>HTTP/1.1 507 Insufficient Storage</D:status><D:error><D:number-of-matches-within-limits/></D:error></D:response><D:sync-token>t2</D:sync-token></D:multistatus>
        """)
        #expect(status.isTruncated)
        #expect(status.responses[1].errors == [DAVName.numberOfMatchesWithinLimits])
        #expect(status.syncToken == "t2")
    }

    @Test func malformedXMLHasAPosition() throws {
        let error = #expect(throws: MultistatusParser.Failure.self) {
            try parse("<D:multistatus xmlns:D=\"DAV:\">\n<D:response>\n<D:href>/a</D:hre>\n</D:multistatus>")
        }
        #expect(error?.line == 3)
        #expect((error?.column ?? 0) > 0)
    }

    @Test func htmlPageIsRejected() throws {
        #expect(throws: MultistatusParser.Failure.self) { try parse("<html><body><h1>502 Bad Gateway</h1></body></html>") }
        #expect(throws: MultistatusParser.Failure.self) { try parse("") }
        #expect(throws: MultistatusParser.Failure.self) { try parse("<?xml version=\"1.0\"?><multistatus/>") }
    }

    @Test func syncErrorNamesStoreURLAndPosition() throws {
        let error = #expect(throws: SyncError.self) {
            try parser.parse(Data("<D:multistatus xmlns:D=\"DAV:\"><D:response>".utf8), store: "contacts", url: "http://u:p@127.0.0.1/b/")
        }
        #expect(error?.kind == .malformedResponse)
        #expect(error?.store == "contacts")
        #expect(error?.url == "http://REDACTED@127.0.0.1/b/")
        #expect(error?.position.hasPrefix("line 1") == true)
    }

    @Test func oversizedDataIsFlaggedNotKept() throws {
        let small = MultistatusParser(maxDataBytes: 100)
        let big = String(repeating: "x", count: 5000)
        let status = try small.parse(Data("""
        <D:multistatus xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:carddav"><D:response><D:href>/b/1.vcf</D:href><D:propstat><D:prop><D:getetag>"1"</D:getetag><C:address-data>\(big)</C:address-data></D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response><D:response><D:href>/b/2.vcf</D:href><D:propstat><D:prop><D:getetag>"2"</D:getetag><C:address-data>ok</C:address-data></D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response></D:multistatus>
        """.utf8))
        #expect(status.responses[0].dataTooLarge)
        #expect(status.responses[0].data == nil)
        #expect(status.responses[1].data == "ok")
    }

    @Test func oversizedOtherTextFailsTheParse() throws {
        let small = MultistatusParser(maxDataBytes: 100, maxTextBytes: 64)
        #expect(throws: MultistatusParser.Failure.self) {
            try small.parse(Data("<D:multistatus xmlns:D=\"DAV:\"><D:sync-token>\(String(repeating: "t", count: 200))</D:sync-token></D:multistatus>".utf8))
        }
    }

    @Test func unreadableStatusLineFails() throws {
        #expect(throws: MultistatusParser.Failure.self) {
            try parse("<D:multistatus xmlns:D=\"DAV:\"><D:response><D:href>/a</D:href><D:status>teapot</D:status></D:response></D:multistatus>")
        }
    }

    @Test func hrefsResolveToCollectionRelativeIDs() throws {
        let collection = try #require(WebDAVCollection(url: "http://127.0.0.1:8080/dav/my%20book"))
        #expect(collection.url == "http://127.0.0.1:8080/dav/my%20book/")
        #expect(collection.path == "/dav/my book/")
        #expect(collection.id(forHref: "/dav/my%20book/a%20b.vcf") == "a b.vcf")
        #expect(collection.id(forHref: "http://127.0.0.1:8080/dav/my%20book/c.vcf") == "c.vcf")
        #expect(collection.id(forHref: "/dav/my%20book/") == nil)
        #expect(collection.id(forHref: "/dav/my%20book") == nil)
        #expect(collection.id(forHref: "/elsewhere/x.vcf") == "/elsewhere/x.vcf")
        #expect(WebDAVCollection(url: "ftp://x/") == nil)
        #expect(WebDAVCollection(url: "not a url") == nil)
    }

    /// corelibs' XMLParser segfaults on `<?name?>` (found by the libFuzzer target): refused with
    /// its position before parsing; instructions with data still parse.
    @Test func processingInstructionsWithoutDataAreRefusedBeforeParsing() throws {
        let parser = MultistatusParser(maxDataBytes: 100)
        for (body, line, column) in [(#"<multistatus xmlns="DAV:"><?foo?></multistatus>"#, 1, 27),
                                     ("<?xml?>\n<error xmlns=\"DAV:\"/>", 1, 1),
                                     ("<multistatus xmlns=\"DAV:\">\n  <?x?></multistatus>", 2, 3),
                                     ("<?<?xml?>DAxml?>DA", 1, 3)] {
            #expect(throws: MultistatusParser.Failure(line: line, column: column,
                                                      message: "processing instruction without data (<?name?>): refused, the XML parser cannot take it")) {
                try parser.parse(Data(body.utf8))
            }
        }
        let status = try parser.parse(Data(#"<?xml version="1.0"?><multistatus xmlns="DAV:"><?foo bar?><?foo ?></multistatus>"#.utf8))
        #expect(status.responses.isEmpty)
    }
}
