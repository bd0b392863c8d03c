import Testing
@testable import FerryKit

/// Which collections a `dav-account` store syncs, and their tables, as a spec.
@Suite struct CollectionSelectionTests {
    static func collection(_ segment: String, _ content: WebDAVOptions.Content = .addressBook, name: String? = nil, components: [String] = []) -> DiscoveredCollection {
        var collection = DiscoveredCollection(url: "https://dav.example.com/home/\(segment)/", segment: segment, content: content)
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
        #expect(dash == "personal__a_b_" + CollectionSelection.hash("a-b"))
        #expect(underscore == "personal__a_b")
        #expect(dash != underscore)
        // Upper case, non-ASCII, nothing usable at all.
        #expect(CollectionSelection.tableName(account: "p", segment: "Contacts") == "p___ontacts_" + CollectionSelection.hash("Contacts"))
        #expect(CollectionSelection.tableName(account: "p", segment: "Família").hasSuffix("_" + CollectionSelection.hash("Família")))
        #expect(CollectionSelection.tableName(account: "p", segment: "日本") == "p__" + CollectionSelection.hash("日本"))
        // A Nextcloud-style id: long, dashed.
        let long = CollectionSelection.tableName(account: String(repeating: "a", count: 40), segment: "0f8e5c3a-1b2c-4d5e-8f90-a1b2c3d4e5f6-calendar")
        #expect(long.count <= 63)
        #expect(StoreSectionReader.problem(withName: long) == nil)
    }

    @Test func theHashIsStableAcrossRuns() {
        // FNV-1a of "a-b": a table's name must not change between builds or processes.
        #expect(CollectionSelection.hash("a-b") == "2a89df63")
        #expect(CollectionSelection.hash("") == "811c9dc5")
        #expect(CollectionSelection.hash("a") == "e40c292c")
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
        #expect(chosen.map(\.table) == ["p__book_0_\(CollectionSelection.hash("book-0"))", "p__book_1_\(CollectionSelection.hash("book-1"))",
                                        "p__book_2_\(CollectionSelection.hash("book-2"))", "p__book_3_\(CollectionSelection.hash("book-3"))",
                                        "p__book_4_\(CollectionSelection.hash("book-4"))"])
        // The same segment in two home sets (an address book and a calendar both called "main").
        let twins = [Self.collection("main"), Self.collection("main", .calendar)]
        #expect(CollectionSelection().choose(from: twins, account: "p", otherStores: [])
            == .failure(.sameTable("p__main", first: twins[0].url, second: twins[1].url)))
        #expect(CollectionSelection().choose(from: [Self.collection("main")], account: "p", otherStores: ["p__main"])
            == .failure(.tableIsAStore("p__main", url: twins[0].url)))
    }
}
