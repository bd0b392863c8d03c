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
/// ``parse(_:)`` takes a complete body; ``MultistatusStream`` parses one while it downloads,
/// on a thread of its own, handing each response over as soon as it is complete (the WebDAV
/// source uses it for every multistatus, so memory does not grow with the collection).
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
        var screen = MultistatusScreen()
        try screen.screen(data)
        try screen.finish()
        let parser = XMLParser(data: data)
        let handler = prepare(parser)
        let ok = parser.parse()
        return try handler.outcome(of: parser, parsed: ok)
    }

    /// Sets `parser` up for one body and gives it its delegate, which `onResponse` turns into a
    /// stream: each complete `DAV:response` goes there instead of into the result
    /// (``MultistatusStream``). The parser keeps its delegate weakly: hold on to the handler.
    func prepare(_ parser: XMLParser, onResponse: ((Multistatus.Response) -> Void)? = nil) -> MultistatusHandler {
        parser.shouldProcessNamespaces = true
        parser.shouldReportNamespacePrefixes = false
        parser.shouldResolveExternalEntities = false
        let handler = MultistatusHandler(maxDataBytes: maxDataBytes, maxTextBytes: maxTextBytes, onResponse: onResponse)
        parser.delegate = handler
        return handler
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
