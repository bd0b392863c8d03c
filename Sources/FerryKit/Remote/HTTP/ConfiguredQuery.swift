/// Query parameters from a store's `query.NAME = VALUE` lines, set on every request URL of the
/// store: plain text (`query.state = all`) or a secret by reference
/// (`query.api_key = credential:api-key`, for APIs that take their key in the URL).
///
/// A URL carrying a secret is only ever built for the request itself: the store's `url`, its
/// cursors and every URL in an error or a log line leave the secret out (errors are redacted
/// with the store's secrets at the pass's end as well, for URLs a server sends back).
public struct ConfiguredQuery: Sendable, Equatable {
    public var items: [ConfiguredField] = []

    public init(_ items: [ConfiguredField] = []) {
        self.items = items
    }

    public var isEmpty: Bool { items.isEmpty }

    /// The secrets the parameters carry.
    var secrets: [Secret] { items.compactMap(\.secret) }

    /// `url` with every configured parameter set (replacing one of the same name).
    func apply(to url: String) -> String {
        items.reduce(url) { URLQuery.setting($1.name, to: $1.value.value, in: $0) }
    }

    /// `url` without the configured secret parameters (a next-page link a server built from the
    /// request's URL echoes them).
    func removingSecrets(from url: String) -> String {
        let names = Set(items.filter { $0.secret != nil }.map { URLQuery.encode($0.name) })
        guard !names.isEmpty, let question = url.firstIndex(of: "?") else { return url }
        let fragment = url[question...].firstIndex(of: "#").map { String(url[$0...]) } ?? ""
        let query = url[url.index(after: question)..<(url[question...].firstIndex(of: "#") ?? url.endIndex)]
        let kept = query.split(separator: "&").filter { item in !names.contains(String(item.prefix { $0 != "=" })) }
        return String(url[..<question]) + (kept.isEmpty ? "" : "?" + kept.joined(separator: "&")) + fragment
    }
}
