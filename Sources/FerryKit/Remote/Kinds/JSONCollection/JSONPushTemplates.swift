import Foundation

/// How a JSON collection store pushes local writes (opt-in: a JSON API has no one way to write),
/// read from `push-create`, `push-update`, `push-delete` and `push-if-match`.
///
///     push-create = POST {url}
///     push-update = PATCH {url}/{id}
///     push-delete = DELETE {url}/{id}
///     push-if-match = yes
///
/// `{url}` is the store's URL without its query, `{id}` the record's id, percent-encoded.
/// `PATCH` sends a JSON merge patch (RFC 7396) of what changed locally; `PUT` and `POST` the
/// whole local object. With `push-if-match = yes` (for APIs whose record version is its ETag)
/// updates and deletes carry `If-Match: "<base version>"`, so a record changed remotely
/// meanwhile answers 412, a conflict; without it the record is read first and its version
/// compared, which leaves a short window an API without conditional requests cannot close.
/// Creates carry an `Idempotency-Key` that stays the same when a create is sent again after a
/// crash, which APIs that honour it use to answer with the first create instead of a second.
public struct JSONPushTemplates: Sendable, Equatable {
    public struct Template: Sendable, Equatable {
        public var method: String
        /// The URL with `{url}` and `{id}` placeholders.
        public var url: String

        /// The URL for one record of a store at `storeURL`.
        func url(store storeURL: String, id: String?) -> String {
            let base = storeURL.split(separator: "?", maxSplits: 1).first.map(String.init) ?? storeURL
            var allowed = CharacterSet.urlPathAllowed
            allowed.remove(charactersIn: "/?#%;")
            let encoded = id.map { $0.addingPercentEncoding(withAllowedCharacters: allowed) ?? $0 } ?? ""
            return url.replacingOccurrences(of: "{url}", with: base.trimmingTrailingSlashes).replacingOccurrences(of: "{id}", with: encoded)
        }
    }

    public var create: Template?
    public var update: Template?
    public var delete: Template?
    public var ifMatch = false

    public init(create: Template? = nil, update: Template? = nil, delete: Template? = nil, ifMatch: Bool = false) {
        self.create = create
        self.update = update
        self.delete = delete
        self.ifMatch = ifMatch
    }

    public static let keys: Set<String> = ["push-create", "push-update", "push-delete", "push-if-match"]

    /// The local operations the store can push: the others are refused when written.
    public var operations: Set<LocalOperation> {
        var operations: Set<LocalOperation> = []
        if create != nil { operations.insert(.create) }
        if update != nil { operations.insert(.update) }
        if delete != nil { operations.insert(.delete) }
        return operations
    }

    /// Reads the keys; nil (with problems reported) when one is malformed.
    init?(reading reader: inout StoreOptionReader) {
        var valid = true
        func template(_ key: String, methods: Set<String>, needsID: Bool) -> Template? {
            guard let text = reader.text(key) else { return nil }
            let parts = text.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true).map(String.init)
            guard parts.count == 2, methods.contains(parts[0].uppercased()) else {
                reader.problem(key, "expected a method (\(methods.sorted().joined(separator: ", "))) and a URL template, as in \(methods.sorted().first!) {url}\(needsID ? "/{id}" : ""), got \(text.debugDescription)")
                valid = false
                return nil
            }
            let url = parts[1].trimmingCharacters(in: .whitespaces)
            let sample = Template(method: parts[0].uppercased(), url: url).url(store: "https://example.com/x", id: "1")
            guard let components = URLComponents(string: sample), ["http", "https"].contains(components.scheme?.lowercased() ?? ""), components.host != nil else {
                reader.problem(key, "\(url.debugDescription) is not an http(s) URL template ({url} is the store's URL, {id} the record's id)")
                valid = false
                return nil
            }
            if needsID, !url.contains("{id}") {
                reader.problem(key, "\(url.debugDescription) does not name the record: put {id} in it")
                valid = false
                return nil
            }
            return Template(method: parts[0].uppercased(), url: url)
        }
        create = template("push-create", methods: ["POST", "PUT"], needsID: false)
        update = template("push-update", methods: ["PUT", "PATCH", "POST"], needsID: true)
        delete = template("push-delete", methods: ["DELETE", "POST"], needsID: true)
        if let text = reader.text("push-if-match") {
            switch text {
            case "yes", "true", "on": ifMatch = true
            case "no", "false", "off": ifMatch = false
            default:
                reader.problem("push-if-match", "expected yes or no, got '\(text)'")
                valid = false
            }
        }
        guard valid else { return nil }
    }
}
