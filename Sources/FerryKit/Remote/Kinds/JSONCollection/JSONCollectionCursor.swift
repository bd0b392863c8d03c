import Foundation

/// What a JSON collection pass stores: the highest version seen (the incremental filter's
/// value) and the first page's validators for a conditional request next time.
///
/// Stored as a small JSON object: `{"highWater":"2024-05-01 12:00:00","etag":"\"v1\"",
/// "lastModified":"...","firstURL":"...","delta":"...","feedMark":"...","feedStart":"..."}`
/// (absent keys omitted).
struct JSONCollectionCursor: Equatable {
    var highWater: String?
    var etag: String?
    var lastModified: String?
    /// The URL the validators belong to: they are sent only to that same URL.
    var firstURL: String?
    /// Where the next pass starts, as the API's last page said (`delta-link`: a URL;
    /// `sync-token`: a token).
    var delta: String?
    /// A feed's own mark (``JSONFeed``: the highest version its entries had).
    var feedMark: String?
    /// Where a changes feed read from a start goes on (Stripe's newest event seen); "" when
    /// the feed was empty when its head was read.
    var feedStart: String?

    init(highWater: String? = nil, etag: String? = nil, lastModified: String? = nil, firstURL: String? = nil) {
        self.highWater = highWater
        self.etag = etag
        self.lastModified = lastModified
        self.firstURL = firstURL
    }

    init?(stored: String) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(stored.utf8)) as? [String: Any] else { return nil }
        highWater = object["highWater"] as? String
        etag = object["etag"] as? String
        lastModified = object["lastModified"] as? String
        firstURL = object["firstURL"] as? String
        delta = object["delta"] as? String
        feedMark = object["feedMark"] as? String
        feedStart = object["feedStart"] as? String
    }

    var stored: String {
        var object: [String: String] = [:]
        object["highWater"] = highWater
        object["etag"] = etag
        object["lastModified"] = lastModified
        object["firstURL"] = firstURL
        object["delta"] = delta
        object["feedMark"] = feedMark
        object["feedStart"] = feedStart
        let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        return String(decoding: data ?? Data("{}".utf8), as: UTF8.self)
    }

    /// Version order, as the merge engine's ``VersionComparison/ordered`` (``VersionOrder``).
    static func isNewer(_ candidate: String, than current: String?) -> Bool {
        guard let current else { return true }
        return VersionOrder.isNewer(candidate, than: current)
    }
}
