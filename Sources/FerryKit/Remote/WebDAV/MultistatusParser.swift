import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// Parses a WebDAV `DAV:multistatus` (or `DAV:error`) body into a ``Multistatus`` with
/// Foundation's SAX-style `XMLParser`: namespace-aware (any prefixes, default namespaces), no
/// DOM, and every text node capped.
///
///     let status = try MultistatusParser(maxDataBytes: store.maxRecordBytes).parse(body)
///     for response in status.responses { ... }
///
/// Memory: the parser keeps only the responses it returns. Text of a `getetag`, `href`,
/// `status` or `sync-token` longer than ``maxTextBytes`` fails the parse; address-data or
/// calendar-data longer than ``maxDataBytes`` is dropped and flagged
/// (``Multistatus/Response/dataTooLarge``) so the caller can report a ``RecordProblem``.
///
/// Why the body is buffered: swift-corelibs-foundation's `XMLParser(stream:)` pulls from an
/// `InputStream` synchronously, which would block the pass's run loop; there is no push API. So
/// the WebDAV source collects each response body (bounded by
/// ``SessionConfiguration/maxResponseBytes``, and by the multiget batch size in practice) and
/// parses it once complete.
public struct MultistatusParser: Sendable {
    /// Largest address-data / calendar-data text kept (the store's `maxRecordBytes`).
    public var maxDataBytes: Int
    /// Largest text of any other element.
    public var maxTextBytes: Int

    public init(maxDataBytes: Int, maxTextBytes: Int = 64 << 10) {
        self.maxDataBytes = maxDataBytes
        self.maxTextBytes = maxTextBytes
    }

    /// Why a body could not be parsed, with the parser's position.
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        public var line: Int
        public var column: Int
        public var message: String

        public init(line: Int, column: Int, message: String) {
            self.line = line
            self.column = column
            self.message = message
        }

        public var description: String { "line \(line) column \(column): \(message)" }
    }

    /// Parses a complete body.
    public func parse(_ data: Data) throws(Failure) -> Multistatus {
        // swift-corelibs-foundation's XMLParser traps (a force-unwrapped String) when libxml2
        // hands it an element name that is not valid UTF-8, which a mutated body can make it do
        // (found by WebDAVFuzzTests). WebDAV bodies are UTF-8 (both servers, RFC 4918 §8.1 in
        // practice), so anything else is refused here, with its position, before parsing.
        try Self.requireUTF8(data)
        try Self.requireProcessingInstructionsWithData(data)
        let parser = XMLParser(data: data)
        parser.shouldProcessNamespaces = true
        parser.shouldReportNamespacePrefixes = false
        parser.shouldResolveExternalEntities = false
        let handler = MultistatusHandler(maxDataBytes: maxDataBytes, maxTextBytes: maxTextBytes)
        parser.delegate = handler
        let ok = parser.parse()
        if let failure = handler.failure {
            throw failure
        }
        guard ok else {
            let message = parser.parserError.map { "malformed XML (\(($0 as NSError).code)): \($0.localizedDescription)" } ?? "malformed XML"
            throw Failure(line: parser.lineNumber, column: parser.columnNumber, message: message)
        }
        guard handler.isComplete else {
            throw Failure(line: parser.lineNumber, column: parser.columnNumber, message: "document ends inside an element")
        }
        guard handler.sawRoot else {
            throw Failure(line: parser.lineNumber, column: parser.columnNumber, message: "empty body, expected DAV:multistatus")
        }
        return handler.result
    }

    /// Throws at the first byte that is not part of valid UTF-8.
    static func requireUTF8(_ data: Data) throws(Failure) {
        if String(validating: data, as: UTF8.self) != nil { return }
        // Find the offending byte for the position (rare path: decode scalar by scalar).
        var line = 1
        var column = 1
        var iterator = data.makeIterator()
        var decoder = UTF8()
        loop: while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar):
                if scalar == "\n" {
                    line += 1
                    column = 1
                } else {
                    column += 1
                }
            case .emptyInput:
                break loop
            case .error:
                throw Failure(line: line, column: column, message: "body is not valid UTF-8")
            }
        }
        throw Failure(line: line, column: column, message: "body is not valid UTF-8")
    }

    /// Parses a complete body, turning a failure into ``SyncError`` `.malformedResponse` naming
    /// the store, URL and position.
    public func parse(_ data: Data, store: String, url: String) throws(SyncError) -> Multistatus {
        do {
            return try parse(data)
        } catch {
            throw SyncError(.malformedResponse, store: store, url: url, position: "line \(error.line) column \(error.column)", message: "invalid WebDAV XML: \(error.message)")
        }
    }
}
