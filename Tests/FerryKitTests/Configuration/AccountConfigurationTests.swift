@testable import FerryKit
import Testing

/// `dav-account` stores as the configuration reads them: what each key becomes, and every
/// problem with its line and key.
@Suite struct AccountConfigurationTests {
    static let file = "/etc/ferry/test.conf"

    func parse(_ text: String) throws(ConfigurationErrors) -> FerryConfiguration {
        try ConfigurationLoader.parse(text: text, file: Self.file, environment: ["STATE_DIRECTORY": "/var/lib/ferry"])
    }

    func problems(_ text: String) -> [ConfigurationProblem] {
        do {
            _ = try parse(text)
            return []
        } catch {
            return error.problems
        }
    }

    @Test func everyKeyIsRead() throws {
        let configuration = try parse("""
            [store personal]
            kind = dav-account
            url = https://dav.example.com/
            content = calendars
            collections = Work*, family
            components = events, tasks
            time-range = -30d..+90d
            max-collections = 20
            """)
        let options = try #require(configuration.stores.first?.options.as(DAVAccountOptions.self))
        #expect(options.selection == CollectionSelection(contents: [.calendar], patterns: ["Work*", "family"], components: ["VEVENT", "VTODO"], maximum: 20))
        #expect(options.calendarFilter == CalendarFilter(past: .seconds(30 * 86_400), future: .seconds(90 * 86_400), components: ["VEVENT", "VTODO"]))
    }

    @Test func anEmailAddressNamesTheDomainDiscoveryStartsFrom() throws {
        let configuration = try parse("""
            [store personal]
            kind = dav-account
            url = mailto:alice@example.com
            """)
        #expect(configuration.stores.first?.url == "https://example.com/")
        #expect(problems("""
            [store book]
            kind = carddav
            url = mailto:alice@example.com
            """) == [.init(file: Self.file, line: 3, key: "url", message: "mailto: URLs are only allowed for kind = dav-account")])
        #expect(problems("""
            [store personal]
            kind = dav-account
            url = mailto:alice
            """) == [.init(file: Self.file, line: 3, key: "url", message: "mailto: needs an address with a domain (mailto:alice@example.com), got 'mailto:alice'")])
    }

    @Test func badValuesNameTheirLine() {
        #expect(problems("""
            [store personal]
            kind = dav-account
            url = https://dav.example.com/
            content = mail
            """).map(\.line) == [4])
        #expect(problems("""
            [store personal]
            kind = dav-account
            url = https://dav.example.com/
            time-range = +30d..-30d
            """).map(\.key) == ["time-range"])
        #expect(problems("""
            [store calendar]
            kind = caldav
            url = https://dav.example.com/cal/
            components = meetings
            """).map(\.key) == ["components"])
        // An address book has no components.
        #expect(problems("""
            [store book]
            kind = carddav
            url = https://dav.example.com/book/
            time-range = -30d..+30d
            """).map(\.key) == ["time-range"])
        // Its collections' tables are named after it.
        #expect(problems("""
            [store a_very_long_account_name_that_leaves_no_room_for_tables]
            kind = dav-account
            url = https://dav.example.com/
            """).map(\.key) == ["kind"])
    }
}
