import Testing
@testable import FerryKit

/// Which collections a `dav-account` store syncs, and their tables, as a spec.
@Suite struct CollectionSelectionTests {
    static func collection(_ segment: String, _ content: WebDAVOptions.Content = .addressBook, name: String? = nil, components: [String] = [],
                           home: String? = nil) -> DiscoveredCollection {
        let home = home ?? (content == .calendar ? "calendars/user" : "addressbooks/user")
        var collection = DiscoveredCollection(url: "https://dav.example.com/\(home)/\(segment)/", segment: segment, content: content)
        collection.displayName = name
        collection.components = components
        return collection
    }

    @Test func aSegmentOfTableCharactersIsKeptAsItIs() {
        #expect(CollectionSelection.tableName(account: "personal", segment: "contacts") == "personal__contacts")
        #expect(CollectionSelection.tableName(account: "personal", segment: "work_2024") == "personal__work_2024")
    }

    @Test func anyOtherSegmentIsMappedAndHashedSoNoTwoShareATable() {
        let dash = CollectionSelection.tableName(account: "personal", segment: "a-b")
        let underscore = CollectionSelection.tableName(account: "personal", segment: "a_b")
        #expect(dash == "personal__a_b_" + MemberTables.hash("a-b"))
        #expect(underscore == "personal__a_b")
        #expect(dash != underscore)
        // Upper case and accents are folded to lower case (hashed, so `Contacts` and `contacts`
        // stay apart); what has no lower-case form at all is only the hash.
        #expect(CollectionSelection.tableName(account: "p", segment: "Contacts") == "p__contacts_" + MemberTables.hash("Contacts"))
        #expect(CollectionSelection.tableName(account: "p", segment: "Team-Cal") == "p__team_cal_" + MemberTables.hash("Team-Cal"))
        #expect(CollectionSelection.tableName(account: "p", segment: "Família") == "p__familia_" + MemberTables.hash("Família"))
        #expect(CollectionSelection.tableName(account: "p", segment: "日本") == "p__" + MemberTables.hash("日本"))
        // A Nextcloud-style id: long, dashed.
        let long = CollectionSelection.tableName(account: String(repeating: "a", count: 40), segment: "0f8e5c3a-1b2c-4d5e-8f90-a1b2c3d4e5f6-calendar")
        #expect(long.count <= 63)
        #expect(StoreSectionReader.problem(withName: long) == nil)
    }

    @Test func theHashIsStableAcrossRuns() {
        // FNV-1a of "a-b": a table's name must not change between builds or processes.
        #expect(MemberTables.hash("a-b") == "2a89df63")
        #expect(MemberTables.hash("") == "811c9dc5")
        #expect(MemberTables.hash("a") == "e40c292c")
    }

    @Test func contentPatternsAndComponentsChoose() {
        let book = Self.collection("contacts", name: "Family")
        let events = Self.collection("work", .calendar, name: "Work", components: ["VEVENT"])
        let tasks = Self.collection("todo", .calendar, name: "Chores", components: ["VTODO"])
        let silent = Self.collection("any", .calendar)
        #expect(CollectionSelection(contents: [.calendar]).includes(book) == false)
        #expect(CollectionSelection(contents: [.addressBook]).includes(book))
        // Patterns match display names or segments, any case, with * and ?.
        let chosen = CollectionSelection(patterns: ["fam*", "TODO"])
        #expect(chosen.includes(book))
        #expect(chosen.includes(tasks))
        #expect(!chosen.includes(events))
        #expect(CollectionSelection(patterns: ["w?rk"]).includes(events))
        // Components: a calendar that does not say takes every component.
        let onlyTasks = CollectionSelection(components: ["VTODO"])
        #expect(onlyTasks.includes(tasks))
        #expect(!onlyTasks.includes(events))
        #expect(onlyTasks.includes(silent))
        #expect(onlyTasks.includes(book))
    }

    @Test func tooManyCollectionsOrTwoOnOneTableAreRefused() {
        let found = (0..<5).map { Self.collection("book-\($0)") }
        #expect(CollectionSelection(maximum: 4).choose(from: found, account: "p", otherStores: []) == .failure(.tooMany(found: 5, maximum: 4)))
        guard case .success(let chosen) = CollectionSelection(maximum: 5).choose(from: found, account: "p", otherStores: []) else {
            Issue.record("five collections under a maximum of five")
            return
        }
        #expect(chosen.map(\.table) == ["p__book_0_\(MemberTables.hash("book-0"))", "p__book_1_\(MemberTables.hash("book-1"))",
                                        "p__book_2_\(MemberTables.hash("book-2"))", "p__book_3_\(MemberTables.hash("book-3"))",
                                        "p__book_4_\(MemberTables.hash("book-4"))"])
        #expect(CollectionSelection().choose(from: [Self.collection("main")], account: "p", otherStores: ["p__main"])
            == .failure(.tableIsAStore("p__main", url: Self.collection("main").url)))
    }

    /// Stock layouts: a default address book and a default calendar with one segment in two
    /// homes (sabre/dav's `default`, others' `Default` or `personal`).
    @Test(arguments: ["default", "Default", "personal", "Team Cal"])
    func collectionsOfOneSegmentInTwoHomesGetTwoTables(segment: String) throws {
        let book = Self.collection(segment), calendar = Self.collection(segment, .calendar)
        let chosen = try CollectionSelection().choose(from: [book, calendar], account: "p", otherStores: []).get()
        #expect(chosen.map(\.table) == [CollectionSelection.tableName(account: "p", segment: segment, qualifier: "addressbook"),
                                        CollectionSelection.tableName(account: "p", segment: segment, qualifier: "calendar")])
        #expect(Set(chosen.map(\.table)).count == 2)
        #expect(chosen.allSatisfy { $0.table.count <= 63 && $0.table.allSatisfy { "abcdefghijklmnopqrstuvwxyz0123456789_".contains($0) } })
        // Either alone has the plain name.
        #expect(try CollectionSelection().choose(from: [calendar], account: "p", otherStores: []).get().map(\.table)
            == [CollectionSelection.tableName(account: "p", segment: segment)])
    }

    @Test func collectionsOfOneContentInTwoHomesAreToldApartByTheirURL() throws {
        let mine = Self.collection("default", .calendar), shared = Self.collection("default", .calendar, home: "calendars/team")
        let chosen = try CollectionSelection().choose(from: [mine, shared], account: "p", otherStores: []).get()
        #expect(Set(chosen.map(\.table)).count == 2)
        #expect(chosen.map(\.table) == [CollectionSelection.tableName(account: "p", segment: "default", qualifier: "calendar"),
                                        CollectionSelection.tableName(account: "p", segment: "default", qualifier: MemberTables.hash(shared.url))])
    }

    /// A name never changes with what else the account comes to hold: a collection the replica
    /// knows keeps its table, and a newcomer whose name would meet it is qualified instead.
    @Test func aExpandedMemberKeepsItsTableWhenATwinAppears() throws {
        let book = Self.collection("default"), calendar = Self.collection("default", .calendar)
        let first = try CollectionSelection().choose(from: [book], account: "p", otherStores: []).get()
        #expect(first.map(\.table) == ["p__default"])
        let known = [book.url: "p__default"]
        let later = try CollectionSelection().choose(from: [book, calendar], account: "p", otherStores: [], known: known).get()
        #expect(later.map(\.table) == ["p__default", "p__default_calendar"])
        // Order of discovery does not matter.
        let reversed = try CollectionSelection().choose(from: [calendar, book], account: "p", otherStores: [], known: known).get()
        #expect(reversed.map(\.table) == ["p__default_calendar", "p__default"])
        // A table named under the earlier rules stays too.
        let old = try CollectionSelection().choose(from: [Self.collection("Team-Cal")], account: "p", otherStores: [],
                                                   known: [Self.collection("Team-Cal").url: "p___eam_al_12345678"]).get()
        #expect(old.map(\.table) == ["p___eam_al_12345678"])
    }
}
