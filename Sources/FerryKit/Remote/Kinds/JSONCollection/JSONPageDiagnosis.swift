import Foundation

/// What a page shows to be wrong with a store's configuration, said as the key to fix: the
/// records array missing where `records-path` says, no record with the id or version field,
/// the next-page field missing while another one is there; and a GraphQL API's `errors`.
enum JSONPageDiagnosis {
    /// Field names APIs use for the next page, looked for when the configured one is absent.
    static let commonNextFields = ["next", "next_url", "nextUrl", "next_page", "nextPage", "next_page_url", "links.next",
                                   "meta.next", "paging.next", "pagination.next", "@odata\\.nextLink", "next_cursor", "nextCursor",
                                   "cursor", "meta.next_cursor", "response_metadata.next_cursor"]

    /// What page 1 shows to be wrong with the configuration, in words: no record has the id or
    /// version field, or the next-page field is missing while another one is there. Tombstones
    /// (`deleted-when`) say nothing of the version field: APIs list a deleted record by its id
    /// alone (Graph's `@removed` entries, Google's cancelled events), and a page may hold nothing
    /// else.
    static func misconfiguration(_ page: JSONPage, options: JSONCollectionOptions, isTombstone: (JSONScannedRecord) -> Bool = { _ in false }) -> String? {
        let records = page.records.filter { !($0.id != nil && isTombstone($0)) }
        if !records.isEmpty {
            let reasons = records.compactMap(\.problem?.reason)
            if reasons.count == records.count, reasons.allSatisfy({ $0.hasPrefix("record has no id") }) {
                return "id-field \(options.idField) matches none of the \(records.count) records of page 1; set id-field = to the records' id field"
            }
            if reasons.count == records.count, reasons.allSatisfy({ $0.hasPrefix("record has no version") }) {
                return "version-field \(options.versionFieldName) matches none of the \(records.count) records of page 1; set version-field = to a field that changes with every update (or none, when the records have no such field)"
            }
        }
        let configured: String
        switch options.pagination {
        case .nextURL(let path), .cursor(_, let path), .bodyCursor(let path): configured = path
        case .link, .singlePage, .pageNumber, .offset, .afterLast, .headerCursor, .beforeFirst, .bodyOffset: return nil
        }
        guard page.fields[configured] == nil else { return nil }
        let present = commonNextFields.filter { $0 != configured && page.fields[$0]?.text?.isEmpty == false }
        guard let other = present.first else { return nil }
        return "pagination names \(configured), which page 1 does not have, but it has \(other): set pagination = \(options.paginationSpec(path: other))"
    }

    /// A page 2 asked for by position that lists exactly page 1's records: the server ignored
    /// the parameter `pagination =` names (a typo such as `page:pgae`, or a parameter this API
    /// calls otherwise), said as that key to fix. Read as a listing that moved instead, it was
    /// read again on every pass and the pass ended incomplete, never pointing at the key.
    static func ignoredPositionParameter(page1: [String], page2: [String], options: JSONCollectionOptions) -> String? {
        guard !page1.isEmpty, page1 == page2 else { return nil }
        let parameter: String
        let spec: String
        switch options.pagination {
        case .pageNumber(let param): (parameter, spec) = (param, "page:\(param)")
        case .offset(let param): (parameter, spec) = (param, "offset:\(param)")
        default: return nil
        }
        return "page 2 lists the same \(page1.count) record\(page1.count == 1 ? "" : "s") as page 1: the server seems to ignore the parameter \(parameter) "
            + "named in pagination = \(spec); set pagination = \(spec.prefix { $0 != ":" }):NAME with the parameter the API documents for it"
    }

    /// The messages of a page's top-level `errors` array (GraphQL's error form), if it has one.
    static func reportedErrors(_ body: Data) -> String? {
        guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
              let errors = object["errors"] as? [Any], !errors.isEmpty else { return nil }
        let messages = errors.map { error in ((error as? [String: Any])?["message"] as? String) ?? "\(error)" }
        return messages.joined(separator: "; ").shortened(to: 300)
    }

    /// A page 1 of the wrong shape for `records-path`, said as the configuration to fix: an
    /// object where the records array was expected names its members that hold arrays.
    static func recordsPathProblem(_ body: Data, options: JSONCollectionOptions) -> String? {
        guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any] else { return nil }
        var found: [String] = []
        func look(_ value: [String: Any], prefix: String) {
            for (key, member) in value.sorted(by: { $0.key < $1.key }) {
                if member is [Any] { found.append(prefix + key) } else if let inner = member as? [String: Any], prefix.isEmpty { look(inner, prefix: key + ".") }
            }
        }
        look(object, prefix: "")
        let current = options.recordsPath.isEmpty ? "records-path is not set, so the page itself should be the array"
            : "records-path = \(options.recordsPath) is not an array here"
        guard let first = found.first else { return "page 1 is a JSON object with no array of records: \(current)" }
        return "page 1 is a JSON object and \(current): set records-path = \(first)"
            + (found.count > 1 ? " (arrays here: \(found.joined(separator: ", ")))" : "")
    }

    /// The scalar at `path` inside the JSON object at `range` of `body`, as text.
    static func value(at path: String, in body: Data, range: Range<Int>) -> String? {
        let bytes = body[(body.startIndex + range.lowerBound)..<(body.startIndex + range.upperBound)]
        guard var node = try? JSONDecoder().decode(JSONValue.self, from: bytes) else { return nil }
        for part in JSONPath.components(path) {
            guard case .object(let members) = node, let next = members[part] else { return nil }
            node = next
        }
        switch node {
        case .string(let text): return text
        case .integer(let number): return String(number)
        case .number(let number): return String(number)
        case .bool, .null, .array, .object: return nil
        }
    }
}
