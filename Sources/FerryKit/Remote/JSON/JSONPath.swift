/// A dotted path into a JSON document as `ferry.conf` writes it: `data.items`, and a member
/// whose name has a dot written with a backslash before it, `@odata\.nextLink` (Microsoft
/// Graph's member, not `nextLink` inside `@odata`). `\\` is a backslash.
enum JSONPath {
    /// The member names along `path`, escapes undone; an empty path has none.
    static func components(_ path: String) -> [String] {
        guard !path.isEmpty else { return [] }
        var names: [String] = []
        var current = ""
        var escaped = false
        for character in path {
            if escaped {
                current.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == "." {
                names.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        if escaped { current.append("\\") }
        names.append(current)
        return names
    }

    /// Whether every member name along `path` is non-empty (`a..b` and `a.` are not paths).
    static func isValid(_ path: String) -> Bool {
        !path.isEmpty && !components(path).contains(where: \.isEmpty)
    }
}
