import Foundation

/// A JSON collection store's options, parsed and checked.
struct JSONCollectionOptions: Equatable {
    /// How the next page is found.
    enum Pagination: Equatable {
        /// RFC 8288 `Link: <url>; rel="next"`.
        case link
        /// A page field holding the next page's URL (relative URLs resolve against the current one).
        case nextURL(path: String)
        /// A page field holding a token sent as query parameter `param` of the first URL.
        case cursor(param: String, path: String)
        /// One page.
        case singlePage
    }

    var recordsPath = ""
    var idField = "id"
    var versionField = "updated_at"
    var pagination = Pagination.link
    var updatedParam: String?
    var pageSizeParam: String?
    var totalPath: String?

    /// Parses the options; throws the list of problems.
    init(_ store: StoreConfiguration) throws(JSONCollectionOptionsError) {
        var problems: [String] = []
        func value(_ key: String) -> String? { store.options[key]?.value }
        recordsPath = value("records-path") ?? ""
        idField = value("id-field") ?? "id"
        versionField = value("version-field") ?? "updated_at"
        for (key, path) in [("id-field", idField), ("version-field", versionField)] where path.isEmpty || path.split(separator: ".", omittingEmptySubsequences: false).contains(where: \.isEmpty) {
            problems.append("\(key) \(path.debugDescription) is not a dotted field path")
        }
        if recordsPath.split(separator: ".", omittingEmptySubsequences: false).contains(where: \.isEmpty), !recordsPath.isEmpty {
            problems.append("records-path \(recordsPath.debugDescription) is not a dotted field path")
        }
        if let spec = value("pagination") {
            switch Self.pagination(spec) {
            case .some(let parsed): pagination = parsed
            case .none: problems.append("pagination \(spec.debugDescription) is not link, next-url:<path>, cursor:<param>=<path> or none")
            }
        }
        updatedParam = value("updated-param").flatMap { $0.isEmpty ? nil : $0 }
        pageSizeParam = value("page-size-param").flatMap { $0.isEmpty ? nil : $0 }
        totalPath = value("total-path").flatMap { $0.isEmpty ? nil : $0 }
        let url = store.url.lowercased()
        if !(url.hasPrefix("http://") || url.hasPrefix("https://") || url.hasPrefix("file://")) {
            problems.append("json url must be http://, https:// or file://")
        }
        if store.username != nil, store.secrets["password"] == nil {
            problems.append("json store has a username but no password secret")
        }
        if case .link = pagination, url.hasPrefix("file://") {
            problems.append("pagination link needs HTTP headers; a file:// chain uses next-url:<path>")
        }
        guard problems.isEmpty else { throw JSONCollectionOptionsError(problems: problems) }
    }

    static func pagination(_ spec: String) -> Pagination? {
        let text = spec.trimmingCharacters(in: .whitespaces)
        if text == "link" { return .link }
        if text == "none" { return .singlePage }
        if text.hasPrefix("next-url:") {
            let path = String(text.dropFirst("next-url:".count))
            return path.isEmpty ? nil : .nextURL(path: path)
        }
        if text.hasPrefix("cursor:") {
            let rest = text.dropFirst("cursor:".count)
            guard let equals = rest.firstIndex(of: "=") else { return nil }
            let param = String(rest[..<equals]), path = String(rest[rest.index(after: equals)...])
            return param.isEmpty || path.isEmpty ? nil : .cursor(param: param, path: path)
        }
        return nil
    }

    /// The page-level fields the scanner reports.
    var fieldPaths: [String] {
        var paths: [String] = []
        switch pagination {
        case .nextURL(let path), .cursor(_, let path): paths.append(path)
        case .link, .singlePage: break
        }
        if let totalPath { paths.append(totalPath) }
        return paths
    }
}

struct JSONCollectionOptionsError: Error {
    var problems: [String]
}
