import Foundation
import Testing
@testable import FerryKit

/// How a member's answer becomes a change: the table of WebDAVMemberReader.
@Suite struct WebDAVMemberReaderTests {
    static let reader = WebDAVMemberReader(kind: .carddav, maxRecordBytes: 64)
    static let card = "BEGIN:VCARD\r\nUID:u1\r\nFN:Ada\r\nEND:VCARD\r\n"
    /// The replica's one form of a body: LF line ends, however the server sent it.
    static let stored = Data("BEGIN:VCARD\nUID:u1\nFN:Ada\nEND:VCARD\n".utf8)

    static func response(status: Int?, data: String? = nil, tooLarge: Bool = false) -> Multistatus.Response {
        var response = Multistatus.Response(position: 3)
        response.hrefs = ["/book/a.vcf"]
        response.propstatStatus = status
        response.etag = "\"e1\""
        response.data = data
        response.dataTooLarge = tooLarge
        return response
    }

    @Test func aResponseInAQueryOrMultigetAnswer() throws {
        let reader = Self.reader
        guard case .change(.upsert(let record)) = reader.read(Self.response(status: 200, data: Self.card), id: "a.vcf") else {
            Issue.record("a 200 with data is the record")
            return
        }
        // CRLF kept by the server's escaping (`&#13;`, CDATA) is stored as LF.
        #expect(record.id == "a.vcf" && record.version == "\"e1\"" && record.body == Self.stored)
        #expect(record.fields?["UID"] == "u1" && record.fields?["FN"] == "Ada")
        #expect(reader.read(Self.response(status: 404), id: "a.vcf") == .fetchAlone)
        #expect(reader.read(Self.response(status: 410), id: "a.vcf") == .fetchAlone)
        #expect(reader.read(Self.response(status: 200), id: "a.vcf") == .problem("no address-data in the answer"))
        #expect(reader.read(Self.response(status: 200, tooLarge: true), id: "a.vcf") == .problem("larger than 64 bytes"))
        #expect(reader.read(Self.response(status: 200, data: String(repeating: "x", count: 65)), id: "a.vcf") == .problem("larger than 64 bytes"))
        #expect(reader.read(Self.response(status: 403), id: "a.vcf") == .problem("status 403"))
        let calendar = WebDAVMemberReader(kind: .caldav, maxRecordBytes: 64)
        #expect(calendar.read(Self.response(status: 200), id: "e.ics") == .problem("no calendar-data in the answer"))
    }

    @Test func aMemberFetchedAlone() {
        let reader = Self.reader
        func head(_ status: Int, etag: String? = "\"e2\"") -> ResponseHead {
            ResponseHead(status: status, headers: HTTPHeaders(etag.map { [("ETag", $0)] } ?? []), url: "http://h/book/a.vcf")
        }
        let body = Data(Self.card.utf8)
        if case .change(.upsert(let record)) = reader.read(get: head(200), body: body, id: "a.vcf") {
            #expect(record.version == "\"e2\"" && record.body == Self.stored)
        } else {
            Issue.record("a 200 with an ETag is the record")
        }
        #expect(reader.read(get: head(200, etag: nil), body: body, id: "a.vcf") == .problem("GET answered without an ETag"))
        #expect(reader.read(get: head(200), body: Data([0xFF, 0xFE]), id: "a.vcf") == .problem("body is not valid UTF-8"))
        #expect(reader.read(get: head(200), body: Data(count: 65), id: "a.vcf") == .problem("larger than 64 bytes"))
        #expect(reader.read(get: head(404), body: Data(), id: "a.vcf") == .change(.delete(id: "a.vcf")))
        #expect(reader.read(get: head(410), body: Data(), id: "a.vcf") == .change(.delete(id: "a.vcf")))
        for status in [401, 403, 429] {
            #expect(reader.read(get: head(status), body: Data(), id: "a.vcf") == .failPass)
        }
        #expect(reader.read(get: head(500), body: Data(), id: "a.vcf") == .problem("missing from the multiget answer, and GET answered 500"))
    }
}
