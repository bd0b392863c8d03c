/// Notices a listing read by position (a page number, an offset) that moves while it is read:
/// a record deleted or added before the current position shifts every later one, so a record
/// is read twice or not at all, and nothing on the page says so.
///
/// What gives it away, as the APIs document it:
/// - an id read before comes again, on any later page (a record edited under a listing sorted
///   by update time moves to its end; one added before the position pushes the page's first
///   record onto the next);
/// - the total the API states changes between pages: in the body (`total-path`: Jira's
///   `total`) or in a header (WordPress's `X-WP-Total` and `X-WP-TotalPages`, GitLab's
///   `X-Total`, `X-Total-Count`);
/// - at the end, fewer records were read than the first page's total said there were.
///
/// Ids are kept as 64-bit digests: a million of them cost 8 MB, and a collision only makes the
/// producer read the listing again.
struct ListingDrift {
    private var seen: Set<UInt64> = []
    private var firstTotals: [String: String] = [:]
    private var recordsRead = 0
    /// What moved, in words, once something did.
    private(set) var moved: String?

    /// Headers that state a listing's size.
    static let totalHeaders = ["X-WP-Total", "X-WP-TotalPages", "X-Total", "X-Total-Pages", "X-Total-Count"]

    /// Notes page `number`'s ids and what it states of the listing's size (`totals`: a name,
    /// such as a header's or a path's, and its value).
    mutating func note(page number: Int, ids: [String], totals: [(String, String)]) {
        for id in ids {
            var hash = FNV1a.offsetBasis
            for byte in id.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
            if !seen.insert(hash).inserted, moved == nil {
                moved = "record \(id.debugDescription) came again on page \(number)"
            }
        }
        recordsRead += ids.count
        for (name, value) in totals {
            if number == 1 || firstTotals[name] == nil {
                if number == 1 { firstTotals[name] = value }
            } else if moved == nil, let first = firstTotals[name], first != value {
                moved = "\(name) was \(first) on page 1 and \(value) on page \(number)"
            }
        }
    }

    /// At the end of the listing: whether the records read add up to the first page's total
    /// (`total`: the name of the count among what ``note(page:ids:totals:)`` was given).
    mutating func end(totalNamed names: [String]) {
        guard moved == nil else { return }
        for name in names {
            if let text = firstTotals[name], let total = Int(text), recordsRead != total {
                moved = "page 1 said \(name) = \(total) and \(recordsRead) record\(recordsRead == 1 ? " was" : "s were") listed"
                return
            }
        }
    }
}
