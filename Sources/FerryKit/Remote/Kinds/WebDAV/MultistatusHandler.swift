import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// The `XMLParserDelegate` behind ``MultistatusParser`` and ``MultistatusStream``: a small state
/// machine over the element stack that keeps only the fields a pass uses. Each complete
/// `DAV:response` goes to `onResponse` when there is one (streaming), else into the result.
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
        var isDAV: Bool

        init(namespace: String, name: String) {
            self.namespace = namespace
            self.name = name
            isDAV = namespace == DAVName.dav
        }

        /// For messages and error conditions only: matching compares the parts, since building
        /// this string for every element of a 10,000-member answer showed in its profile.
        var qualified: String { namespace + name }

        func isDAV(_ local: String) -> Bool { isDAV && name == local }
    }

    /// The propstat being read: its props count only if its status is 2xx.
    private struct Propstat {
        var status: Int?
        var etag: String?
        var data: String?
        var dataTooLarge = false
        /// Children of `DAV:resourcetype`, when the propstat has one.
        var resourceTypes: [String]?
    }

    private let maxDataBytes: Int
    private let maxTextBytes: Int
    private let onResponse: ((Multistatus.Response) -> Void)?
    private var responseCount = 0
    private var stack: [Element] = []
    private var capture = Capture.none
    private var text = ""
    private var textBytes = 0
    private var textOverflow = false
    private var response: Multistatus.Response?
    private var propstat: Propstat?
    private var result = Multistatus()
    private var failure: MultistatusParser.Failure?
    private var sawRoot = false

    init(maxDataBytes: Int, maxTextBytes: Int, onResponse: ((Multistatus.Response) -> Void)?) {
        self.maxDataBytes = maxDataBytes
        self.maxTextBytes = maxTextBytes
        self.onResponse = onResponse
    }

    /// The result once XMLParser returned (`parsed` is what `parse()` said): the first failure
    /// the handler or libxml2 saw, a document cut short, or the multistatus.
    func outcome(of parser: XMLParser, parsed: Bool) throws(MultistatusParser.Failure) -> Multistatus {
        if let failure {
            throw failure
        }
        guard parsed else {
            let message = parser.parserError.map { "malformed XML (\(($0 as NSError).code)): \($0.localizedDescription)" } ?? "malformed XML"
            throw MultistatusParser.Failure(line: parser.lineNumber, column: parser.columnNumber, message: message)
        }
        guard isComplete else {
            throw MultistatusParser.Failure(line: parser.lineNumber, column: parser.columnNumber, message: "document ends inside an element")
        }
        guard sawRoot else {
            throw MultistatusParser.Failure(line: parser.lineNumber, column: parser.columnNumber, message: "empty body, expected DAV:multistatus")
        }
        return result
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
        switch depth {
        case 0:
            guard element.isDAV("multistatus") || element.isDAV("error") else {
                fail(parser, "expected DAV:multistatus, got \(element.qualified)")
                return
            }
            sawRoot = true
            result.root = element.name
        case 1:
            if result.root == "error" {
                result.errors.append(element.qualified)
            } else if element.isDAV("response") {
                response = Multistatus.Response(position: responseCount)
            } else if element.isDAV("sync-token") {
                begin(.syncToken)
            }
        default:
            guard response != nil, let parent, parent.isDAV else { return }
            switch parent.name {
            case "response" where depth == 2:
                if element.isDAV("href") {
                    begin(.href)
                } else if element.isDAV("status") {
                    begin(.responseStatus)
                } else if element.isDAV("propstat") {
                    propstat = Propstat()
                }
            case "error" where depth == 3:
                response?.errors.append(element.qualified)
            case "propstat" where propstat != nil && element.isDAV("status"):
                begin(.propstatStatus)
            case "resourcetype" where propstat != nil && depth == 5:
                propstat?.resourceTypes?.append(element.qualified)
            case "prop" where propstat != nil && depth == 4:
                if element.isDAV("resourcetype") {
                    propstat?.resourceTypes = []
                } else if element.isDAV("getetag") {
                    begin(.etag)
                } else if element.name == "address-data" && element.namespace == DAVName.cardDAV
                            || element.name == "calendar-data" && element.namespace == DAVName.calDAV {
                    begin(.data)
                }
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
        if element.isDAV("propstat"), depth == 2, let finished = propstat {
            propstat = nil
            endPropstat(finished)
        } else if element.isDAV("response"), depth == 1, let finished = response {
            response = nil
            responseCount += 1
            result.noteMember(finished)
            if let onResponse {
                onResponse(finished)
            } else {
                result.responses.append(finished)
            }
        }
    }

    /// Whether the element just closed is the one whose text is being captured (its children,
    /// possible only inside data, do not end it).
    private func isCaptureEnd(_ element: Element) -> Bool {
        switch capture {
        case .none: false
        case .syncToken: element.isDAV("sync-token")
        case .href: element.isDAV("href")
        case .responseStatus, .propstatStatus: element.isDAV("status")
        case .etag: element.isDAV("getetag")
        case .data: element.name == "address-data" || element.name == "calendar-data"
        }
    }

    private func endCapture(_ parser: XMLParser) {
        let kind = capture
        capture = .none
        // Data is kept as sent; only the short texts are trimmed (natively: Foundation's
        // trimmingCharacters bridges through NSString and was a quarter of a first sync's CPU).
        let trimmed = kind == .data ? "" : Self.trimmingWhitespace(text)
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
            if let types = finished.resourceTypes { response?.resourceTypes = types }
        } else if response?.propstatStatus == nil {
            response?.propstatStatus = finished.status
        }
    }

    /// `text` without leading and trailing white space and line breaks, as
    /// `trimmingCharacters(in: .whitespacesAndNewlines)` trims it.
    static func trimmingWhitespace(_ text: String) -> String {
        let scalars = text.unicodeScalars
        guard let first = scalars.firstIndex(where: { !isWhitespaceOrNewline($0) }) else { return "" }
        let last = scalars.lastIndex { !isWhitespaceOrNewline($0) }!
        if first == scalars.startIndex, last == scalars.index(before: scalars.endIndex) { return text }
        return String(scalars[first...last])
    }

    /// Whether `scalar` is in `CharacterSet.whitespacesAndNewlines`: the Unicode White_Space
    /// scalars and, as corelibs' set still has it, U+200B ZERO WIDTH SPACE
    /// (FastPathEquivalenceTests compares the two over the whole Basic Multilingual Plane).
    static func isWhitespaceOrNewline(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.isWhitespace || scalar.value == 0x200B
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
    private var isComplete: Bool { stack.isEmpty }
}
