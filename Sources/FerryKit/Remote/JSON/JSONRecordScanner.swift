import Foundation

/// Finds the records of a JSON page and their ids and versions without building a DOM: one
/// validating pass over the raw bytes (RFC 8259, UTF-8 checked, nesting limited), no Foundation
/// JSON on the hot path.
///
/// Each record's exact bytes are reported as a range, so the body is stored verbatim; only the id,
/// the version and the requested page fields become Swift strings.
///
///     let scanner = JSONRecordScanner(layout: .init(recordsPath: "results", idPath: "objectId",
///                                                   versionPath: "updatedAt", fieldPaths: ["count"]))
///     let page = try data.withUnsafeBytes { try scanner.scan($0) }
public struct JSONRecordScanner: Sendable {
    /// Where things are in a page.
    public struct Layout: Sendable, Equatable {
        /// Dotted path of the records array (``JSONPath``: `\.` for a dot in a name); "" means
        /// the page itself is the array.
        public var recordsPath: String
        /// Dotted path of the record inside each element of the records array, for feeds whose
        /// elements wrap it (Stripe's events: `data.object`); "" means the element is the record.
        /// ``idPath`` and ``versionPath`` are then inside the record, and its range is the
        /// inner object's.
        public var recordPath: String
        /// Dotted path of the id inside a record.
        public var idPath: String
        /// Dotted path of the version inside a record; nil when the kind has none.
        public var versionPath: String?
        /// Whether a record's version is a digest of its JSON (``JSONContentDigest``), for
        /// records that carry none; ``versionPath`` is then nil.
        public var versionIsDigest: Bool
        /// Dotted paths of page-level scalars to report (`next`, `next_url`, `count`).
        public var fieldPaths: [String]
        /// Whether an integer id is accepted (as its decimal text); otherwise it is a problem.
        public var allowsIntegerIDs: Bool
        public var maxDepth: Int

        public init(recordsPath: String, recordPath: String = "", idPath: String = "id", versionPath: String? = nil, versionIsDigest: Bool = false,
                    fieldPaths: [String] = [], allowsIntegerIDs: Bool = false, maxDepth: Int = 512) {
            precondition(!(versionIsDigest && versionPath != nil), "a version is either a field or a digest")
            self.recordsPath = recordsPath
            self.recordPath = recordPath
            self.idPath = idPath
            self.versionPath = versionPath
            self.versionIsDigest = versionIsDigest
            self.fieldPaths = fieldPaths
            self.allowsIntegerIDs = allowsIntegerIDs
            self.maxDepth = maxDepth
        }
    }

    /// How much of each record a scan reports.
    public enum Detail: Sendable {
        /// Every record's range, id, version and problem.
        case records
        /// Every record's range and id; versions are neither read nor checked (the ids of a
        /// page whose records were merged before, listed for a sweep).
        case ids
        /// How many records there are, nothing of them (a page whose records were merged
        /// before, between sweeps).
        case count
    }

    public let layout: Layout
    private let recordsPath: [[UInt8]]
    /// Page-level paths: index 0 is the records path (when not empty), then the field paths.
    private let pagePaths: [[[UInt8]]]
    private let fieldOffset: Int
    /// Record-level paths: index 0 the id, index 1 the version (when requested).
    private let recordPaths: [[[UInt8]]]
    /// The record's path inside each element (``Layout/recordPath``); empty: the element.
    private let recordInElement: [[UInt8]]

    public init(layout: Layout) {
        precondition(layout.fieldPaths.count < 60, "too many field paths")
        self.layout = layout
        func split(_ path: String) -> [[UInt8]] {
            JSONPath.components(path).map { Array($0.utf8) }
        }
        recordsPath = split(layout.recordsPath)
        var paths: [[[UInt8]]] = recordsPath.isEmpty ? [] : [recordsPath]
        fieldOffset = paths.count
        paths += layout.fieldPaths.map(split)
        pagePaths = paths
        recordPaths = [split(layout.idPath)] + (layout.versionPath.map { [split($0)] } ?? [])
        recordInElement = split(layout.recordPath)
    }

    /// Scans a page. Invalid JSON throws a `.syntax` error with its byte offset; valid JSON of
    /// the wrong shape throws `.shape` (only after the whole page validated). `detail`: what
    /// of each record to report; the whole page is validated whatever it is.
    public func scan(_ bytes: UnsafeRawBufferPointer, detail: Detail = .records) throws(JSONScanError) -> JSONPage {
        guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), !bytes.isEmpty else {
            throw JSONScanError(.syntax, offset: 0, reason: "empty page")
        }
        var walk = PageWalk(scanner: self, parser: JSONByteParser(base: base, count: bytes.count, maxDepth: layout.maxDepth), detail: detail)
        try walk.run()
        return walk.page
    }

    public func scan(_ data: Data, detail: Detail = .records) throws(JSONScanError) -> JSONPage {
        let result: Result<JSONPage, JSONScanError> = data.withUnsafeBytes { bytes in
            do throws(JSONScanError) { return .success(try scan(bytes, detail: detail)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// Validates a whole document (any top-level value) without looking for records.
    public static func validate(_ data: Data, maxDepth: Int = 512) throws(JSONScanError) {
        let result: Result<Void, JSONScanError> = data.withUnsafeBytes { bytes in
            guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), !bytes.isEmpty else {
                return .failure(JSONScanError(.syntax, offset: 0, reason: "empty document"))
            }
            var parser = JSONByteParser(base: base, count: bytes.count, maxDepth: maxDepth)
            do throws(JSONScanError) {
                parser.skipWhitespace()
                try parser.skipValue()
                parser.skipWhitespace()
                guard parser.index == parser.count else { throw parser.unexpected() }
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try result.get()
    }

    /// One scan's mutable state.
    private struct PageWalk {
        let scanner: JSONRecordScanner
        var parser: JSONByteParser
        let detail: Detail
        /// Record paths looked for: the id, and the version when it is reported.
        let recordCandidates: UInt64
        var page = JSONPage()
        var recordsSeen = false
        var shapeProblem: JSONScanError?

        init(scanner: JSONRecordScanner, parser: JSONByteParser, detail: Detail) {
            self.scanner = scanner
            self.parser = parser
            self.detail = detail
            recordCandidates = scanner.recordPaths.count == 2 && detail == .records ? 0b11 : 0b01
        }

        mutating func run() throws(JSONScanError) {
            parser.skipWhitespace()
            if scanner.recordsPath.isEmpty {
                if try parser.peek() == UInt8(ascii: "[") {
                    recordsSeen = true
                    try scanRecords()
                } else {
                    noteShape("the page is not an array")
                    try parser.skipValue()
                }
            } else if try parser.peek() == UInt8(ascii: "{") {
                try walkObject(level: 0, candidates: (1 << UInt64(scanner.pagePaths.count)) - 1)
            } else {
                noteShape("the page is not an object")
                try parser.skipValue()
            }
            parser.skipWhitespace()
            guard parser.index == parser.count else { throw parser.fail("trailing characters after the page") }
            if let shapeProblem { throw shapeProblem }
            if !recordsSeen {
                throw JSONScanError(.shape, offset: 0, reason: "no records array at \"\(scanner.layout.recordsPath)\"")
            }
        }

        mutating func noteShape(_ reason: String) {
            if shapeProblem == nil { shapeProblem = JSONScanError(.shape, offset: parser.index, reason: reason) }
        }

        /// An object on the way to wanted page paths; `candidates` has a bit per path whose
        /// first `level` components matched.
        mutating func walkObject(level: Int, candidates: UInt64) throws(JSONScanError) {
            try parser.enter()
            parser.index += 1
            parser.skipWhitespace()
            if try parser.peek() == UInt8(ascii: "}") {
                parser.index += 1
                parser.depth -= 1
                return
            }
            while true {
                guard try parser.peek() == UInt8(ascii: "\"") else { throw parser.unexpected() }
                let keyStart = parser.index + 1
                let escaped = try parser.skipString()
                let key = keyStart..<(parser.index - 1)
                parser.skipWhitespace()
                try parser.expect(UInt8(ascii: ":"))
                parser.skipWhitespace()
                var matched: UInt64 = 0
                var complete = -1
                for (bit, path) in scanner.pagePaths.enumerated() where candidates & (1 << UInt64(bit)) != 0 {
                    guard parser.keyEquals(key, escaped: escaped, path[level]) else { continue }
                    if path.count == level + 1 { complete = bit } else { matched |= 1 << UInt64(bit) }
                }
                // A longer wanted path through an object wins over a shorter one ending here
                // (`paging.next.after` beside the common `paging.next`): an object is no
                // scalar field anyway.
                let descends = matched != 0 && complete != 0 ? try parser.peek() == UInt8(ascii: "{") : false
                if complete == 0, !scanner.recordsPath.isEmpty {
                    if try parser.peek() == UInt8(ascii: "[") {
                        recordsSeen = true
                        try scanRecords()
                    } else {
                        noteShape("\"\(scanner.layout.recordsPath)\" is not an array")
                        try parser.skipValue()
                    }
                } else if descends {
                    try walkObject(level: level + 1, candidates: matched)
                } else if complete >= 0 {
                    let capture = try parser.captureValue()
                    page.fields[scanner.layout.fieldPaths[complete - scanner.fieldOffset]] = scalar(capture)
                } else {
                    try parser.skipValue()
                }
                parser.skipWhitespace()
                let byte = try parser.peek()
                parser.index += 1
                if byte == UInt8(ascii: ",") {
                    parser.skipWhitespace()
                    continue
                }
                guard byte == UInt8(ascii: "}") else {
                    parser.index -= 1
                    throw parser.unexpected()
                }
                parser.depth -= 1
                return
            }
        }

        func scalar(_ capture: JSONByteParser.Capture) -> JSONScalar {
            switch capture.kind {
            case .string: .string(parser.text(of: capture))
            case .number: .number(parser.text(of: capture))
            case .bool(let value): .bool(value)
            case .null: .null
            case .composite: .composite
            }
        }

        mutating func scanRecords() throws(JSONScanError) {
            try parser.enter()
            parser.index += 1
            parser.skipWhitespace()
            if try parser.peek() == UInt8(ascii: "]") {
                parser.index += 1
                parser.depth -= 1
                return
            }
            if detail != .count { page.records.reserveCapacity(64) }
            while true {
                if detail == .count {
                    try parser.skipValue()
                } else if scanner.recordInElement.isEmpty {
                    try scanRecord(position: page.records.count)
                } else {
                    try scanElement(position: page.records.count)
                }
                page.recordCount += 1
                parser.skipWhitespace()
                let byte = try parser.peek()
                parser.index += 1
                if byte == UInt8(ascii: ",") {
                    parser.skipWhitespace()
                    continue
                }
                guard byte == UInt8(ascii: "]") else {
                    parser.index -= 1
                    throw parser.unexpected()
                }
                parser.depth -= 1
                return
            }
        }

        /// An element of the records array that wraps its record (``Layout/recordPath``): the
        /// element is walked to the record, which is scanned as any record, and the element's
        /// range kept beside the record's.
        mutating func scanElement(position: Int) throws(JSONScanError) {
            let start = parser.index
            let count = page.records.count
            if try parser.peek() == UInt8(ascii: "{") {
                try walkElement(level: 0, position: position)
            } else {
                try parser.skipValue()
            }
            if page.records.count == count {
                page.records.append(JSONScannedRecord(range: start..<parser.index, id: nil, version: nil,
                                                      problem: RecordProblem(position: position, reason: "element has no record at \(scanner.layout.recordPath)")))
            }
            page.records[count].element = start..<parser.index
        }

        /// An element (or an object in it on the way to the record).
        mutating func walkElement(level: Int, position: Int) throws(JSONScanError) {
            try parser.enter()
            parser.index += 1
            parser.skipWhitespace()
            if try parser.peek() == UInt8(ascii: "}") {
                parser.index += 1
                parser.depth -= 1
                return
            }
            while true {
                guard try parser.peek() == UInt8(ascii: "\"") else { throw parser.unexpected() }
                let keyStart = parser.index + 1
                let escaped = try parser.skipString()
                let key = keyStart..<(parser.index - 1)
                parser.skipWhitespace()
                try parser.expect(UInt8(ascii: ":"))
                parser.skipWhitespace()
                let component = scanner.recordInElement[level]
                if parser.keyEquals(key, escaped: escaped, component), try parser.peek() == UInt8(ascii: "{") {
                    if level + 1 == scanner.recordInElement.count {
                        // A duplicate key: the last one wins, as in most parsers.
                        if page.records.count > position { page.records.removeLast() }
                        try scanRecord(position: position)
                    } else {
                        try walkElement(level: level + 1, position: position)
                    }
                } else {
                    try parser.skipValue()
                }
                parser.skipWhitespace()
                let byte = try parser.peek()
                parser.index += 1
                if byte == UInt8(ascii: ",") {
                    parser.skipWhitespace()
                    continue
                }
                guard byte == UInt8(ascii: "}") else {
                    parser.index -= 1
                    throw parser.unexpected()
                }
                parser.depth -= 1
                return
            }
        }

        mutating func scanRecord(position: Int) throws(JSONScanError) {
            let start = parser.index
            guard try parser.peek() == UInt8(ascii: "{") else {
                try parser.skipValue()
                page.records.append(JSONScannedRecord(range: start..<parser.index, id: nil, version: nil,
                                                      problem: RecordProblem(position: position, reason: "record is not an object")))
                return
            }
            var captures = RecordCaptures()
            try walkRecord(level: 0, candidates: recordCandidates, captures: &captures)
            let range = start..<parser.index
            var record = JSONScannedRecord(range: range, id: nil, version: nil, problem: nil)
            var problem: String?
            switch captures[0]?.kind {
            case .string:
                let id = parser.text(of: captures[0]!)
                if id.isEmpty { problem = "id is empty" } else { record.id = id }
            case .number(integer: true) where scanner.layout.allowsIntegerIDs:
                record.id = parser.text(of: captures[0]!)
            case nil, .null:
                problem = "record has no id (\(scanner.layout.idPath))"
            default:
                problem = "id is not a string"
            }
            if recordCandidates == 0b11 {
                switch captures[1]?.kind {
                case .string, .number: record.version = parser.text(of: captures[1]!)
                case nil, .null: problem = problem ?? "record has no version (\(scanner.layout.versionPath ?? ""))"
                default: problem = problem ?? "version is not a string or number"
                }
            } else if scanner.layout.versionIsDigest, detail == .records {
                record.version = JSONContentDigest.of(UnsafeBufferPointer(start: parser.base + range.lowerBound, count: range.count))
            }
            if let problem {
                record.problem = RecordProblem(position: position, id: record.id, reason: problem)
            }
            page.records.append(record)
        }

        /// A record object (or an object inside it on the way to the id or version path).
        mutating func walkRecord(level: Int, candidates: UInt64, captures: inout RecordCaptures) throws(JSONScanError) {
            try parser.enter()
            parser.index += 1
            parser.skipWhitespace()
            if try parser.peek() == UInt8(ascii: "}") {
                parser.index += 1
                parser.depth -= 1
                return
            }
            while true {
                guard try parser.peek() == UInt8(ascii: "\"") else { throw parser.unexpected() }
                let keyStart = parser.index + 1
                let escaped = try parser.skipString()
                let key = keyStart..<(parser.index - 1)
                parser.skipWhitespace()
                try parser.expect(UInt8(ascii: ":"))
                parser.skipWhitespace()
                var matched: UInt64 = 0
                var complete = -1
                for bit in 0..<scanner.recordPaths.count where candidates & (1 << UInt64(bit)) != 0 {
                    let path = scanner.recordPaths[bit]
                    guard parser.keyEquals(key, escaped: escaped, path[level]) else { continue }
                    if path.count == level + 1 { complete = bit } else { matched |= 1 << UInt64(bit) }
                }
                if complete >= 0 {
                    // A duplicate key: the last one wins, as in most parsers.
                    let capture = try parser.captureValue()
                    captures[complete] = capture
                    if recordCandidates == 0b11, scanner.recordPaths[0] == scanner.recordPaths[1] {
                        captures[1 - complete] = capture
                    }
                } else if matched != 0, try parser.peek() == UInt8(ascii: "{") {
                    try walkRecord(level: level + 1, candidates: matched, captures: &captures)
                } else {
                    try parser.skipValue()
                }
                parser.skipWhitespace()
                let byte = try parser.peek()
                parser.index += 1
                if byte == UInt8(ascii: ",") {
                    parser.skipWhitespace()
                    continue
                }
                guard byte == UInt8(ascii: "}") else {
                    parser.index -= 1
                    throw parser.unexpected()
                }
                parser.depth -= 1
                return
            }
        }
    }

    /// What a record walk found at the id (0) and version (1) paths; on the stack, where an
    /// array cost an allocation per record.
    private struct RecordCaptures {
        var id: JSONByteParser.Capture?
        var version: JSONByteParser.Capture?

        subscript(path: Int) -> JSONByteParser.Capture? {
            get { path == 0 ? id : version }
            set { if path == 0 { id = newValue } else { version = newValue } }
        }
    }
}
