import Foundation

/// Builds the three requests a WebDAV pass makes: REPORT sync-collection (RFC 6578),
/// REPORT addressbook-multiget / calendar-multiget (RFC 6352 §8.7, RFC 4791 §7.9), and
/// PROPFIND Depth 1 (the fallback for servers without sync-collection).
public struct WebDAVRequestBuilder: Sendable {
    public let collection: WebDAVCollection
    public let kind: StoreKind
    /// The `Authorization` header value, or nil. Never logged: ``HTTPRequest`` leaves headers
    /// out of its description.
    private let authorization: String?

    public init(collection: WebDAVCollection, kind: StoreKind, username: String?, password: String?) {
        self.collection = collection
        self.kind = kind
        if let username {
            let credentials = Data("\(username):\(password ?? "")".utf8).base64EncodedString()
            authorization = "Basic " + credentials
        } else {
            authorization = nil
        }
    }

    private func request(method: String, depth: String, body: String) -> HTTPRequest {
        var headers = HTTPHeaders()
        headers.set("Content-Type", "application/xml; charset=utf-8")
        headers.set("Depth", depth)
        if let authorization { headers.set("Authorization", authorization) }
        return HTTPRequest(method: method, url: collection.url, headers: headers, body: Data(body.utf8))
    }

    /// REPORT sync-collection with `token` ("" for an initial sync), sync-level 1, asking for
    /// `DAV:getetag`, and with `includeData` also for address-data / calendar-data (RFC 6578
    /// allows any property; both Radicale and Xandikos serve it). RFC 6578 §3.2: the REPORT is
    /// defined for Depth 0 only.
    public func syncCollection(token: String, includeData: Bool = false, limit: Int? = nil) -> HTTPRequest {
        let (namespace, data) = kind == .caldav ? (DAVName.calDAV, "calendar-data") : (DAVName.cardDAV, "address-data")
        var body = #"<?xml version="1.0" encoding="utf-8"?>"#
        body += #"<D:sync-collection xmlns:D="DAV:" xmlns:C="\#(namespace)">"#
        body += "<D:sync-token>\(Self.escape(token))</D:sync-token><D:sync-level>1</D:sync-level>"
        if let limit { body += "<D:limit><D:nresults>\(limit)</D:nresults></D:limit>" }
        body += "<D:prop><D:getetag/>" + (includeData ? "<C:\(data)/>" : "") + "</D:prop></D:sync-collection>"
        return request(method: "REPORT", depth: "0", body: body)
    }

    /// REPORT addressbook-multiget (carddav) or calendar-multiget (caldav) for `hrefs`, asking
    /// for the etag and the data.
    public func multiget(hrefs: [String]) -> HTTPRequest {
        let (element, namespace, data) = kind == .caldav
            ? ("calendar-multiget", DAVName.calDAV, "calendar-data")
            : ("addressbook-multiget", DAVName.cardDAV, "address-data")
        var body = #"<?xml version="1.0" encoding="utf-8"?>"#
        body += #"<C:\#(element) xmlns:D="DAV:" xmlns:C="\#(namespace)"><D:prop><D:getetag/><C:\#(data)/></D:prop>"#
        for href in hrefs {
            body += "<D:href>\(Self.escape(href))</D:href>"
        }
        body += "</C:\(element)>"
        // Depth 1: what vdirsyncer and DAVx5 send; Radicale and Xandikos accept it.
        return request(method: "REPORT", depth: "1", body: body)
    }

    /// PROPFIND Depth 1 for every member's etag.
    public func propfind() -> HTTPRequest {
        let body = #"<?xml version="1.0" encoding="utf-8"?><D:propfind xmlns:D="DAV:"><D:prop><D:getetag/><D:resourcetype/></D:prop></D:propfind>"#
        return request(method: "PROPFIND", depth: "1", body: body)
    }

    /// Escapes text for an XML element.
    static func escape(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            default: result.append(character)
            }
        }
        return result
    }
}
