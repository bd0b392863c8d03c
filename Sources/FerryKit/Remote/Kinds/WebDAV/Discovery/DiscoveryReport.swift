import Foundation

/// What `ferry discover` says about one store: what discovery found, and what the store as
/// configured would sync. Pure: the command prints it, tests read it.
public struct DiscoveryReport: Sendable {
    /// What the store as configured would do with the account found.
    public enum Verdict: Sendable {
        /// It syncs the collection its URL names.
        case syncsCollection(String)
        /// Its URL names no collection of its kind; `candidates` are the ones it could name.
        case namesNoCollection(candidates: [String])
        /// A `dav-account` store: the collections it syncs, each with its table.
        case syncsAccount([ChosenCollection])
        /// A `dav-account` store whose choice of collections fails.
        case cannotChoose(CollectionSelectionError)
        /// Discovery failed.
        case failed(SyncError)
    }

    public var store: String
    public var kind: StoreKind
    public var account: DAVAccount?
    public var verdict: Verdict

    /// `otherStores`: the other configured stores' names (a `dav-account` store's tables may
    /// not take one); `knownTables`: the tables the replica has for collections it synced, by
    /// URL, which they keep.
    public init(store: StoreConfiguration, result: Result<DAVAccount, SyncError>, otherStores: Set<String> = [],
                knownTables: [String: String] = [:]) {
        self.store = store.name
        kind = store.kind
        switch result {
        case .failure(let error):
            account = nil
            verdict = .failed(error)
        case .success(let account):
            self.account = account
            if let options = store.options.as(DAVAccountOptions.self) {
                switch options.selection.choose(from: account.collections, account: store.name, otherStores: otherStores, known: knownTables) {
                case .success(let chosen): verdict = .syncsAccount(chosen)
                case .failure(let problem): verdict = .cannotChoose(problem)
                }
                return
            }
            let content: WebDAVOptions.Content = store.kind == .caldav ? .calendar : .addressBook
            let own = account.collections.filter { $0.content == content }
            if account.startedAtCollection, let collection = own.first {
                verdict = .syncsCollection(collection.url)
            } else {
                verdict = .namesNoCollection(candidates: own.map(\.url))
            }
        }
    }

    /// Whether the store works as configured: a `dav-account` store that would sync no
    /// collection does not.
    public var isUsable: Bool {
        switch verdict {
        case .syncsCollection: true
        case .syncsAccount(let chosen): !chosen.isEmpty
        case .namesNoCollection, .cannotChoose, .failed: false
        }
    }

    /// The report for a person, one line each, indented under the store.
    public var lines: [String] {
        var lines = ["store \(store) (\(kind))"]
        if let account {
            if account.contextURL != account.startURL { lines.append(Self.labelled("answered at", account.contextURL)) }
            if let principal = account.principalURL { lines.append(Self.labelled("principal", principal)) }
            for home in account.addressBookHomes { lines.append(Self.labelled("address book home", home)) }
            for home in account.calendarHomes { lines.append(Self.labelled("calendar home", home)) }
            if account.collections.isEmpty { lines.append("  no address books or calendars") }
            for collection in account.collections { lines.append(Self.describe(collection)) }
            for unusable in account.unusable { lines.append(Self.labelled("unusable", "\(unusable.url): \(unusable.reason)")) }
        }
        switch verdict {
        case .syncsCollection(let url):
            lines.append("  syncs \(url)")
        case .namesNoCollection(let candidates):
            let what = kind == .caldav ? "calendar" : "address book"
            if candidates.isEmpty {
                lines.append("  syncs nothing: the url names no \(what), and the account has none")
            } else {
                lines.append("  syncs nothing: the url names no \(what); set url to one of:")
                lines += candidates.map { "    \($0)" }
            }
        case .syncsAccount(let chosen):
            lines.append(chosen.isEmpty ? "  syncs no collection (see content, collections and components)" : "  syncs \(chosen.count) collection\(chosen.count == 1 ? "" : "s"):")
            lines += chosen.map { "    \($0.collection.url) as table \($0.table)" }
        case .cannotChoose(let problem):
            lines.append("  syncs nothing: \(problem)")
        case .failed(let error):
            lines.append("  discovery failed: \(error)")
        }
        return lines
    }

    /// The widest label and the gap after it: every value of the report starts in one column.
    static let labelWidth = "address book home".count + 2

    /// `label` and `value` on an indented line, the value in the report's value column.
    static func labelled(_ label: String, _ value: String) -> String {
        "  " + label.padding(toLength: labelWidth, withPad: " ", startingAt: 0) + value
    }

    /// One collection on one line: kind, URL, name, colour, components, sync-collection.
    static func describe(_ collection: DiscoveredCollection) -> String {
        var text = labelled(collection.content == .addressBook ? "address book" : "calendar", collection.url)
        if let name = collection.displayName { text += " \"\(name)\"" }
        if let color = collection.color { text += " \(color)" }
        if !collection.components.isEmpty { text += " " + collection.components.joined(separator: ",") }
        switch collection.supportsSyncCollection {
        case true?: text += " (sync-collection)"
        case false?: text += " (no sync-collection: listed by PROPFIND)"
        case nil: break
        }
        return text
    }
}

extension DiscoveryReport {
    /// The report as one JSON object, snake_case like Ferry's other JSON outputs.
    public var json: [String: Any] {
        var object: [String: Any] = ["store": store, "kind": kind.name]
        if let account {
            object["start_url"] = account.startURL
            object["context_url"] = account.contextURL
            object["principal"] = account.principalURL ?? NSNull()
            object["addressbook_homes"] = account.addressBookHomes
            object["calendar_homes"] = account.calendarHomes
            object["collections"] = account.collections.map { collection -> [String: Any] in
                [
                    "url": collection.url, "kind": collection.kind.name, "segment": collection.segment,
                    "displayname": collection.displayName ?? NSNull(), "color": collection.color ?? NSNull(),
                    "components": collection.components,
                    "sync_collection": collection.supportsSyncCollection.map { $0 as Any } ?? NSNull(),
                ]
            }
            object["unusable"] = account.unusable.map { ["url": $0.url, "reason": $0.reason] }
        }
        switch verdict {
        case .syncsCollection(let url): object["syncs"] = [url]
        case .namesNoCollection(let candidates):
            object["syncs"] = [String]()
            object["candidates"] = candidates
        case .syncsAccount(let chosen):
            object["syncs"] = chosen.map(\.collection.url)
            object["tables"] = chosen.map(\.table)
        case .cannotChoose(let problem):
            object["syncs"] = [String]()
            object["error"] = problem.description
        case .failed(let error):
            object["error"] = error.description
            object["failed_step"] = error.position
        }
        return object
    }
}
