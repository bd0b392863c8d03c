/// Whether a store's URL names the kind of collection the store syncs, decided from the
/// `DAV:resourcetype` a PROPFIND (Depth 0) of it answered: a pure decision, read as a table.
///
/// | resource type                        | `kind = carddav`         | `kind = caldav`          |
/// |--------------------------------------|--------------------------|--------------------------|
/// | address book                         | ok                       | "an address book"        |
/// | calendar                             | "a calendar"             | ok                       |
/// | principal                            | "a principal"            | "a principal"            |
/// | another collection (a home, the root)| "a plain collection"     | "a plain collection"     |
/// | not a collection                     | "not a collection"       | "not a collection"       |
///
/// A URL that is not the collection syncs nothing (its sync report lists nothing, or lists
/// other collections' contents), and that must be said, not passed as `ok` with 0 records.
enum CollectionCheck {
    /// Why `types` (the URL's resource type) cannot be synced as `content`; nil when it can.
    static func problem(with types: [String], content: WebDAVOptions.Content, url: String) -> String? {
        let wanted = content == .addressBook ? DAVName.addressBook : DAVName.calendar
        if types.contains(wanted) { return nil }
        let what = content == .addressBook ? "an address book (kind = carddav)" : "a calendar (kind = caldav)"
        let found: String
        if types.contains(DAVName.addressBook) {
            found = "an address book: set kind = carddav, or point url at a calendar"
        } else if types.contains(DAVName.calendar) {
            found = "a calendar: set kind = caldav, or point url at an address book"
        } else if types.contains(DAVName.principal) {
            found = "a principal (a user's account), not a collection: point url at one of its address books or calendars"
        } else if types.contains(DAVName.collection) {
            found = "a plain WebDAV collection (a home set or the server's root?): point url at the collection inside it"
        } else {
            found = "not a collection at all"
        }
        return "\(url) is not \(what); it is \(found)"
    }
}
