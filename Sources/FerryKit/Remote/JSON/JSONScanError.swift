/// Why a page could not be scanned: the byte offset where it went wrong and what was expected.
public struct JSONScanError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The bytes are not JSON (RFC 8259) or not valid UTF-8.
        case syntax
        /// Valid JSON, but not the shape the layout describes (no records array, say).
        case shape
    }

    public var kind: Kind
    /// 0-based byte offset into the page.
    public var offset: Int
    public var reason: String

    public init(_ kind: Kind, offset: Int, reason: String) {
        self.kind = kind
        self.offset = offset
        self.reason = reason
    }

    public var description: String { "\(reason) at byte \(offset)" }
}
