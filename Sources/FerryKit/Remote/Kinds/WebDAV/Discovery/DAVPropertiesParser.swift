import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// The properties one `DAV:response` of a PROPFIND answer carried with a 2xx status: what
/// discovery reads about a principal, a home set and the collections in it.
public struct DAVResource: Sendable, Equatable {
    /// One property's value, in the shapes discovery needs: its text, the `DAV:href`s inside it
    /// (`current-user-principal`, the home sets), the qualified names of the elements inside it
    /// (`resourcetype`, `supported-report-set`) and the `name` attributes of `CAL:comp`
    /// elements inside it (`supported-calendar-component-set`).
    public struct Value: Sendable, Equatable {
        public var text = ""
        public var hrefs: [String] = []
        public var elements: Set<String> = []
        public var componentNames: [String] = []
    }

    /// The first `DAV:href` of the response, as sent.
    public var href = ""
    /// The response-level `DAV:status`, if any (a member that is gone).
    public var status: Int?
    /// Properties by qualified name (`namespace + local name`), from 2xx propstats only.
    public var properties: [String: Value] = [:]

    public subscript(_ name: String) -> Value? { properties[name] }

    /// The names inside `DAV:resourcetype`; empty when it was not answered.
    public var resourceTypes: Set<String> { properties[DAVName.dav + "resourcetype"]?.elements ?? [] }
}

/// Parses a PROPFIND multistatus into ``DAVResource`` values with Foundation's `XMLParser`,
/// namespace-aware, after ``MultistatusScreen`` refused what the parser cannot take safely.
///
/// Unlike ``MultistatusParser`` it keeps every property it is asked for (generic values, not a
/// pass's fixed fields) and takes the whole body: discovery answers are small, and a caller
/// caps the body before handing it over.
public struct DAVPropertiesParser: Sendable {
    /// Largest text of one element; a longer one fails the parse.
    public var maxTextBytes: Int

    public init(maxTextBytes: Int = 64 << 10) {
        self.maxTextBytes = maxTextBytes
    }

    public func parse(_ data: Data) throws(MultistatusParser.Failure) -> [DAVResource] {
        var screen = MultistatusScreen()
        try screen.screen(data)
        try screen.finish()
        let parser = XMLParser(data: data)
        parser.shouldProcessNamespaces = true
        parser.shouldReportNamespacePrefixes = false
        parser.shouldResolveExternalEntities = false
        let handler = DAVPropertiesHandler(maxTextBytes: maxTextBytes)
        parser.delegate = handler
        let parsed = parser.parse()
        if let failure = handler.failure { throw failure }
        guard parsed else {
            let message = parser.parserError.map { "malformed XML (\(($0 as NSError).code))" } ?? "malformed XML"
            throw MultistatusParser.Failure(line: parser.lineNumber, column: parser.columnNumber, message: message)
        }
        guard handler.rootName == DAVName.dav + "multistatus" else {
            let found = handler.rootName.isEmpty ? "an empty body" : handler.rootName
            throw MultistatusParser.Failure(line: 1, column: 1, message: "expected DAV:multistatus, found \(found)")
        }
        return handler.resources
    }
}

/// The delegate behind ``DAVPropertiesParser``: tracks the element stack, and below each
/// `DAV:prop` collects one ``DAVResource/Value`` per property; a propstat's values count only
/// when its status is 2xx (the status comes after the props).
private final class DAVPropertiesHandler: NSObject, XMLParserDelegate {
    private let maxTextBytes: Int
    private(set) var resources: [DAVResource] = []
    private(set) var rootName = ""
    private(set) var failure: MultistatusParser.Failure?

    private var stack: [String] = []
    private var text = ""
    private var resource: DAVResource?
    private var propstatValues: [String: DAVResource.Value]?
    private var propstatStatus: Int?
    /// The property being read (a child of `DAV:prop`) and its value.
    private var property: (name: String, depth: Int)?
    private var value = DAVResource.Value()

    init(maxTextBytes: Int) {
        self.maxTextBytes = maxTextBytes
    }

    func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
        let name = (namespaceURI ?? "") + elementName
        if stack.isEmpty { rootName = name }
        let parent = stack.last
        stack.append(name)
        text = ""
        if let property {
            // Inside a property: note what it contains.
            if stack.count > property.depth + 1 || name != property.name {
                value.elements.insert(name)
                if name == DAVName.calDAV + "comp", let component = attributes["name"] { value.componentNames.append(component) }
            }
            return
        }
        switch name {
        case DAVName.dav + "response" where parent == DAVName.dav + "multistatus":
            resource = DAVResource()
        case DAVName.dav + "propstat" where resource != nil:
            propstatValues = [:]
            propstatStatus = nil
        default:
            if parent == DAVName.dav + "prop", propstatValues != nil {
                property = (name, stack.count - 1)
                value = DAVResource.Value()
            }
        }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        guard text.utf8.count + string.utf8.count <= maxTextBytes else {
            failure = failure ?? MultistatusParser.Failure(line: parser.lineNumber, column: parser.columnNumber,
                                                           message: "text longer than \(maxTextBytes) bytes")
            parser.abortParsing()
            return
        }
        text += string
    }

    func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
        self.parser(parser, foundCharacters: String(decoding: CDATABlock, as: UTF8.self))
    }

    func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
        let name = stack.removeLast()
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        text = ""
        if let property {
            if name == DAVName.dav + "href" { value.hrefs.append(trimmed) }
            if stack.count == property.depth {
                if value.text.isEmpty { value.text = trimmed }
                propstatValues?[property.name] = value
                self.property = nil
            }
            return
        }
        switch name {
        case DAVName.dav + "href" where stack.last == DAVName.dav + "response":
            if resource?.href.isEmpty == true { resource?.href = trimmed }
        case DAVName.dav + "status" where stack.last == DAVName.dav + "response":
            resource?.status = Self.status(trimmed)
        case DAVName.dav + "status" where stack.last == DAVName.dav + "propstat":
            propstatStatus = Self.status(trimmed)
        case DAVName.dav + "propstat":
            if let values = propstatValues, let status = propstatStatus, (200..<300).contains(status) {
                resource?.properties.merge(values) { _, new in new }
            }
            propstatValues = nil
        case DAVName.dav + "response":
            if let resource { resources.append(resource) }
            resource = nil
        default:
            break
        }
    }

    func parser(_ parser: XMLParser, parseErrorOccurred parseError: any Error) {
        failure = failure ?? MultistatusParser.Failure(line: parser.lineNumber, column: parser.columnNumber,
                                                       message: "malformed XML (\((parseError as NSError).code))")
    }

    /// `HTTP/1.1 200 OK` → 200.
    private static func status(_ line: String) -> Int? {
        let parts = line.split(separator: " ")
        return parts.count >= 2 ? Int(parts[1]) : nil
    }
}
