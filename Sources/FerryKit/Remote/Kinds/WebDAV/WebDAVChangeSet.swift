import Foundation

/// What one WebDAV pass has learned from its sync reports (or its PROPFIND listing): the
/// members that changed, in first-seen order with the href to fetch each by, and the members
/// deleted. A later answer about a member wins over an earlier one (a truncated report's
/// continuation may report a member again).
struct WebDAVChangeSet {
    /// Changed members' ids, in the order the server first named them.
    private(set) var changed: [String] = []
    private(set) var hrefs: [String: String] = [:]
    /// Deleted members' ids, in order.
    private(set) var deleted: [String] = []
    private var deletedSet: Set<String> = []

    var isEmpty: Bool { changed.isEmpty && deleted.isEmpty }

    /// Adds a member to fetch that the answers did not name (one an earlier pass could not store).
    mutating func noteChanged(_ id: String, href: String) {
        guard hrefs[id] == nil, !deletedSet.contains(id) else { return }
        hrefs[id] = href
        changed.append(id)
    }

    /// Adds a member known to be gone.
    mutating func noteDeleted(_ id: String) {
        guard hrefs[id] == nil, deletedSet.insert(id).inserted else { return }
        deleted.append(id)
    }

    /// Takes one `DAV:response` of a sync report or listing: a 2xx member changed, a 404/410
    /// member is gone; the collection itself and other statuses (a 507 for the request-URI)
    /// say nothing about a member.
    mutating func absorb(_ response: Multistatus.Response, in collection: WebDAVCollection) {
        for href in response.hrefs {
            guard let id = collection.id(forHref: href), !href.hasSuffix("/") else { continue }
            switch response.effectiveStatus ?? 200 {
            case 404, 410:
                if hrefs.removeValue(forKey: id) != nil { changed.removeAll { $0 == id } }
                if deletedSet.insert(id).inserted { deleted.append(id) }
            case 200..<300:
                if deletedSet.remove(id) != nil { deleted.removeAll { $0 == id } }
                if hrefs.updateValue(href, forKey: id) == nil { changed.append(id) }
            default:
                break
            }
        }
    }
}
