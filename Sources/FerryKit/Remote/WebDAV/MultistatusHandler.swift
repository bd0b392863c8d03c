import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// The `XMLParserDelegate` behind ``MultistatusParser``: a small state machine over the element
/// stack that keeps only the fields a pass uses.
final class MultistatusHandler: NSObject, XMLParserDelegate {
    /// What the text of the current element becomes.
    private enum Capture {
        case none
        case syncToken, href, responseStatus, propstatStatus, etag
        case data
    }

    private struct Element {
        var namespace: String
        var name: String
        var qualified: String { namespace + name }
    }

    /// The propstat being read: its props count only if its status is 2xx.
    private struct Propstat {
        var status: Int?
        var etag: String?
        var data: String?
        var dataTooLarge = false
    }

    private let maxDataBytes: Int
    private let maxTextBytes: Int
    private var stack: [Element] = []
    private var capture = Capture.none
    private var text = ""
    private var textBytes = 0
    private var textOverflow = false
    private var response: Multistatus.Response?
    private var propstat: Propstat?
    private(set) var result = Multistatus()
    private(set) var failure: MultistatusParser.Failure?
    private(set) var sawRoot = false

    init(maxDataBytes: Int, maxTextBytes: Int) {
        self.maxDataBytes = maxDataBytes
        self.maxTextBytes = maxTextBytes
    }

    private func fail(_ parser: XMLParser, _ message: String) {
        guard failure == nil else { return }
        failure = MultistatusParser.Failure(line: parser.lineNumber, column: parser.columnNumber, message: message)
        parser.abortParsing()
    }

    func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName qName: String?, attributes attributeDict: [String: String] = [:]) {
        guard failure == nil else { return }
        let element = Element(namespace: namespaceURI ?? "", name: elementName)
        let parent = stack.last
        let depth = stack.count
        stack.append(element)
        if capture != .none {
            // Markup inside a text property (address-data with child elements is not valid).
            if capture == .data { return }
            fail(parser, "unexpected element \(element.qualified) inside a text property")
            return
        }
        let isDAV = element.namespace == DAVName.dav
        switch depth {
        case 0:
            guard isDAV, element.name == "multistatus" || element.name == "error" else {
                fail(parser, "expected DAV:multistatus, got \(element.qualified)")
                return
            }
            sawRoot = true
            result.root = element.name
        case 1:
            if result.root == "error" {
                result.errors.append(element.qualified)
            } else if isDAV, element.name == "response" {
                response = Multistatus.Response(position: result.responses.count)
            } else if isDAV, element.name == "sync-token" {
                begin(.syncToken)
            }
        default:
            guard response != nil, let parent else { return }
            let parentName = parent.qualified
            switch (parentName, element.qualified) {
            case ("DAV:response", "DAV:href") where depth == 2:
                begin(.href)
            case ("DAV:response", "DAV:status") where depth == 2:
                begin(.responseStatus)
            case ("DAV:response", "DAV:propstat") where depth == 2:
                propstat = Propstat()
            case ("DAV:error", _) where depth == 3 && stack[2].qualified == "DAV:error":
                response?.errors.append(element.qualified)
            case ("DAV:propstat", "DAV:status") where propstat != nil:
                begin(.propstatStatus)
            case ("DAV:prop", "DAV:getetag") where propstat != nil && depth == 4:
                begin(.etag)
            case ("DAV:prop", DAVName.cardDAV + "address-data") where propstat != nil && depth == 4,
                 ("DAV:prop", DAVName.calDAV + "calendar-data") where propstat != nil && depth == 4:
                begin(.data)
            default:
                break
            }
        }
    }

    private func begin(_ kind: Capture) {
        capture = kind
        text = ""
        textBytes = 0
        textOverflow = false
    }

    private func append(_ parser: XMLParser, _ string: String) {
        guard capture != .none, !textOverflow else { return }
        textBytes += string.utf8.count
        let limit = capture == .data ? maxDataBytes : maxTextBytes
        if textBytes > limit {
            if capture == .data {
                // Drop what was kept: the record becomes a RecordProblem, the pass goes on.
                textOverflow = true
                text = ""
            } else {
                fail(parser, "text of \(stack.last?.qualified ?? "element") longer than \(limit) bytes")
            }
            return
        }
        text += string
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        append(parser, string)
    }

    func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
        guard capture != .none else { return }
        guard let string = String(data: CDATABlock, encoding: .utf8) else {
            fail(parser, "CDATA is not UTF-8")
            return
        }
        append(parser, string)
    }

    func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?) {
        guard failure == nil, let element = stack.popLast() else { return }
        // swift-corelibs' XMLParser lets some well-formedness errors through (a mismatched end
        // tag, a missing end of document), so the handler checks nesting itself.
        guard element.name == elementName, element.namespace == (namespaceURI ?? "") else {
            return fail(parser, "end tag \((namespaceURI ?? "") + elementName) does not match \(element.qualified)")
        }
        if capture != .none, isCaptureEnd(element) {
            endCapture(parser)
        }
        let depth = stack.count
        if element.qualified == "DAV:propstat", depth == 2, let finished = propstat {
            propstat = nil
            endPropstat(finished)
        } else if element.qualified == "DAV:response", depth == 1, let finished = response {
            response = nil
            result.responses.append(finished)
        }
    }

    /// Whether the element just closed is the one whose text is being captured (its children,
    /// possible only inside data, do not end it).
    private func isCaptureEnd(_ element: Element) -> Bool {
        switch capture {
        case .none: false
        case .syncToken: element.qualified == "DAV:sync-token"
        case .href: element.qualified == "DAV:href"
        case .responseStatus, .propstatStatus: element.qualified == "DAV:status"
        case .etag: element.qualified == "DAV:getetag"
        case .data: element.name == "address-data" || element.name == "calendar-data"
        }
    }

    private func endCapture(_ parser: XMLParser) {
        let kind = capture
        capture = .none
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        switch kind {
        case .none:
            break
        case .syncToken:
            result.syncToken = trimmed
        case .href:
            guard !trimmed.isEmpty else { return fail(parser, "empty DAV:href") }
            response?.hrefs.append(trimmed)
        case .responseStatus:
            guard let status = Self.statusCode(trimmed) else { return fail(parser, "unreadable DAV:status \(trimmed.prefix(80).debugDescription)") }
            response?.status = status
        case .propstatStatus:
            guard let status = Self.statusCode(trimmed) else { return fail(parser, "unreadable DAV:status \(trimmed.prefix(80).debugDescription)") }
            propstat?.status = status
        case .etag:
            propstat?.etag = trimmed
        case .data:
            if textOverflow {
                propstat?.dataTooLarge = true
            } else {
                propstat?.data = text
            }
        }
        text = ""
    }

    private func endPropstat(_ finished: Propstat) {
        guard response != nil else { return }
        let ok = finished.status.map { (200..<300).contains($0) } ?? true
        if ok {
            response?.propstatStatus = finished.status ?? 200
            if let etag = finished.etag { response?.etag = etag }
            if let data = finished.data { response?.data = data }
            if finished.dataTooLarge { response?.dataTooLarge = true }
        } else if response?.propstatStatus == nil {
            response?.propstatStatus = finished.status
        }
    }

    /// `HTTP/1.1 404 Not Found` → 404.
    static func statusCode(_ line: String) -> Int? {
        let parts = line.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/"), let code = Int(parts[1]), (100...599).contains(code) else { return nil }
        return code
    }

    func parser(_ parser: XMLParser, parseErrorOccurred parseError: any Error) {
        guard failure == nil else { return }
        failure = MultistatusParser.Failure(line: parser.lineNumber, column: parser.columnNumber, message: "malformed XML (\((parseError as NSError).code))")
    }

    func parserDidEndDocument(_ parser: XMLParser) {
        if failure == nil, !stack.isEmpty {
            fail(parser, "document ends inside \(stack.last!.qualified)")
        }
    }

    /// Whether the document ended with every element closed.
    var isComplete: Bool { stack.isEmpty }
}
