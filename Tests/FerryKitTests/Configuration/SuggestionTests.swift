import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// A misspelt key, kind, policy or pagination style gets the word it was meant to be.
@Suite struct SuggestionTests {
    func problems(_ keys: [String: String], kind: String = "json") -> [String] {
        let lines = ["[store items]", "kind = \(kind)", "url = https://api.example.com/items"] + keys.map { "\($0.key) = \($0.value)" }
        do {
            _ = try ConfigurationLoader.parse(text: lines.joined(separator: "\n"), file: "/test/ferry.conf", environment: [:])
            return []
        } catch {
            return error.problems.map(\.message)
        }
    }

    @Test func keysKindsPoliciesAndPaginationStylesGetTheirNearestWord() {
        #expect(problems(["version-feild": "updated_at"]) == ["unknown key (did you mean version-field?)"])
        #expect(problems(["intervall": "5m"]) == ["unknown key (did you mean interval?)"])
        #expect(problems(["conflict": "remote-win"]).first?.hasSuffix("(did you mean remote-wins?)") == true)
        #expect(problems(["pagination": "nexturl:next"]).first?.hasSuffix("(did you mean next-url:?)") == true)
        #expect(problems([:], kind: "carddv").first?.hasSuffix("(did you mean carddav?)") == true)
        // Nothing near: the list of what is known, no guess.
        #expect(problems(["zzzzzzzz": "1"]).first?.hasPrefix("unknown key; a json store takes") == true)
    }

    @Test func theDistanceCountsTranspositionsAndStopsEarly() {
        #expect(Suggestion.editDistance(Array("feild"), Array("field"), limit: 3) == 1)
        #expect(Suggestion.editDistance(Array("intervall"), Array("interval"), limit: 3) == 1)
        #expect(Suggestion.editDistance(Array("abc"), Array("xyz"), limit: 1) == 2)
        #expect(Suggestion.closest(to: "a", in: ["b", "c"]) == nil, "a tie is no suggestion")
        #expect(Suggestion.closest(to: "pagnation", in: ["pagination", "page-size"]) == "pagination")
    }
}

/// Errors a new user meets first, worded to point at the fix.
@Suite struct FirstErrorsTests {
    func problems(_ text: String) -> [String] {
        do {
            _ = try ConfigurationLoader.parse(text: text, file: "/test/ferry.conf", environment: [:])
            return []
        } catch {
            return error.problems.map(\.message)
        }
    }

    @Test func aStoreNameWithSpacesSaysWhatANameMayHold() {
        #expect(problems("[store my people]\nkind = json\nurl = https://a.example.com/x\n")
            == ["store name 'my people' has spaces: a store name is one word of lowercase letters, digits and '_' (it names the table), as in [store my_people]"])
    }

    @Test func aHeartbeatOfAnotherSchemeSaysTheSchemeIsNotAllowed() {
        #expect(problems("[store a]\nkind = json\nurl = https://a.example.com/x\nheartbeat-url = ftp://hc.example.com/ping\n")
            == ["scheme ftp is not allowed: a heartbeat is an http or https URL (or credential:NAME or file:/path holding one)"])
    }

    @Test func pathsMayBeWrittenAsColumnPathsAre() throws {
        let store = try configuredStore(kind: "json", url: "https://a.example.com/x",
                                        ["records-path": "$.data.items", "pagination": "next-url:$.links.next", "id-field": "$.key"])
        let options = try #require(store.options.as(JSONCollectionOptions.self))
        #expect(options.recordsPath == "data.items" && options.idField == "key")
        #expect(options.pagination == .nextURL(path: "links.next"))
    }

    @Test func anObjectPageWithoutRecordsPathNamesTheArray() {
        let options = JSONCollectionOptions()
        let page = Data(#"{"items":[{"id":1}],"next":null,"meta":{"tags":[]}}"#.utf8)
        #expect(JSONPageDiagnosis.recordsPathProblem(page, options: options)
            == "page 1 is a JSON object and records-path is not set, so the page itself should be the array: set records-path = items (arrays here: items, meta.tags)")
    }
}

/// The same first errors as a person meets them: `ferry sync` of a JSON store whose pages are
/// objects and that sets no records-path exits 78 saying what to set, piped or verbose, with
/// no Swift type names in either.
@Suite(.enabled(if: FileManager.default.isExecutableFile(atPath: FerrydProcessTests.binary("ferry")), "build ferry first: swift build"))
struct FirstErrorsAsRunTests {
    @Test func anObjectPageWithoutRecordsPathExits78SayingWhatToSet() throws {
        let server = try TestServer.python("json_pages_server.py", arguments: ["--count", "5"])
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let file = directory.path("ferry.conf")
        try "[ferry]\ndatabase = \(directory.path("r.db"))\n[store items]\nkind = json\nurl = \(server.baseURL)/nexturl\npagination = next-url:$.next\n"
            .write(toFile: file, atomically: true, encoding: .utf8)
        for verbose in [false, true] {
            let run = try Shell.outcome(FerrydProcessTests.binary("ferry"), ["sync", "-c", file] + (verbose ? ["--verbose"] : []))
            #expect(run.status == FerryExitCode.configuration.rawValue, "\(run.errors)")
            #expect(run.errors.contains("set records-path = items"), "\(run.errors)")
            #expect(!run.errors.contains("FerryKit.") && !run.errors.contains("Kind."), "no type names: \(run.errors)")
            if verbose { #expect(run.errors.contains("error_kind=configuration"), "\(run.errors)") }
        }
    }
}
