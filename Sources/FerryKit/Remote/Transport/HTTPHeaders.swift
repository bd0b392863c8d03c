/// Header fields in the order received, looked up case-insensitively.
public struct HTTPHeaders: Sendable, Equatable, Sequence {
    public private(set) var fields: [(name: String, value: String)] = []
    /// Lower-cased names of the fields set with ``setCredential(_:_:)``.
    private var credentialNames: Set<String> = []

    public init(_ fields: [(String, String)] = []) {
        self.fields = fields.map { (name: $0.0, value: $0.1) }
    }

    public mutating func add(_ name: String, _ value: String) {
        fields.append((name: name, value: value))
    }

    /// Replaces every field of that name with one.
    public mutating func set(_ name: String, _ value: String) {
        fields.removeAll { $0.name.caseInsensitiveEquals(name) }
        fields.append((name: name, value: value))
    }

    /// Sets a field that carries a credential (an API key, a token): a request redirected to an
    /// origin its first URL does not trust is sent without it.
    public mutating func setCredential(_ name: String, _ value: String) {
        set(name, value)
        credentialNames.insert(name.lowercased())
    }

    /// Whether the field carries a credential: set with ``setCredential(_:_:)``, or one HTTP
    /// always means as one (`Authorization`, `Proxy-Authorization`, `Cookie`).
    public func carriesCredential(_ name: String) -> Bool {
        let lowered = name.lowercased()
        return credentialNames.contains(lowered) || Self.alwaysCredentials.contains(lowered)
    }

    private static let alwaysCredentials: Set<String> = ["authorization", "proxy-authorization", "cookie"]

    /// The fields without those that carry credentials.
    public func removingCredentials() -> HTTPHeaders {
        var kept = self
        kept.fields.removeAll { carriesCredential($0.name) }
        kept.credentialNames = []
        return kept
    }

    /// Sets every field of `other`, replacing fields of the same names, credentials staying
    /// credentials.
    public mutating func merge(_ other: HTTPHeaders) {
        for (name, value) in other {
            if other.carriesCredential(name) { setCredential(name, value) } else { set(name, value) }
        }
    }

    /// Removes every field of that name.
    public mutating func remove(_ name: String) {
        fields.removeAll { $0.name.caseInsensitiveEquals(name) }
        credentialNames.remove(name.lowercased())
    }

    /// The first value of the field, if present.
    public subscript(name: String) -> String? {
        fields.first { $0.name.caseInsensitiveEquals(name) }?.value
    }

    public func values(for name: String) -> [String] {
        fields.filter { $0.name.caseInsensitiveEquals(name) }.map(\.value)
    }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> {
        fields.makeIterator()
    }

    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        lhs.credentialNames == rhs.credentialNames
            && lhs.fields.elementsEqual(rhs.fields) { $0.name == $1.name && $0.value == $1.value }
    }
}

extension String {
    func caseInsensitiveEquals(_ other: String) -> Bool {
        guard utf8.count == other.utf8.count else { return false }
        // Field names are ASCII tokens (RFC 9110 §5.1): compare bytes, folding letters only.
        var ascii = true
        let equal = utf8.elementsEqual(other.utf8) { a, b in
            if a >= 0x80 || b >= 0x80 { ascii = false }
            return a == b || a | 0x20 == b | 0x20 && (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(a | 0x20)
        }
        return ascii ? equal : lowercased() == other.lowercased()
    }
}
