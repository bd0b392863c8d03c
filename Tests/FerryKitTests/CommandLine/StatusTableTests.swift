import Foundation
import Testing
@testable import FerryKit

/// `ferry status` as people read it: a golden table, the cursor in brief, the problem filling
/// a wide terminal and cut only on a narrow one, every character in a pipe.
@Suite struct StatusTableTests {
    static func row(_ store: String, state: String = "ok", cursor: String? = nil, problem: String? = nil, conflicts: Int = 0) -> StoreStatus {
        var row = StoreStatus(store: store, kind: "json", state: nil, now: Date())
        row.state = state
        row.records = 1000
        row.lastSuccess = Date(timeIntervalSince1970: 1_795_521_600)
        row.lastSuccessAgeSeconds = 42
        row.cursor = cursor
        row.lastError = problem
        row.conflicts = conflicts
        return row
    }

    static let advice = "credentials refused by https://auth.example.com/oauth/token (invalid_grant): authorise again with: ferry auth tasks"

    @Test func theTableIsGolden() {
        let rows = [Self.row("demo", cursor: #"{"etag":"\"v1\"","highWater":"2026-11-24T10:00:00Z"}"#),
                    Self.row("contacts", cursor: "http://dav.example.com/sync/0123456789abcdef", conflicts: 2),
                    Self.row("tasks", state: "failing", problem: Self.advice)]
        #expect(StoreStatus.table(rows) == """
            STORE     STATE    LAST SUCCESS          AGE  RECORDS  NEXT  CONFLICTS  CURSOR                PROBLEM
            demo      ok       2026-11-24T12:00:00Z  42s  1000     -     -          2026-11-24T10:00:00Z  -
            contacts  ok       2026-11-24T12:00:00Z  42s  1000     -     2          0123456789abcdef      -
            tasks     failing  2026-11-24T12:00:00Z  42s  1000     -     -          -                     \(Self.advice)
            """)
    }

    @Test func theProblemFillsAWideTerminal() {
        let rows = [Self.row("tasks", state: "failing", problem: Self.advice)]
        #expect(StoreStatus.table(rows, width: 240).hasSuffix("authorise again with: ferry auth tasks"))
    }

    /// On 80 columns every line fits, a problem is never cut (its end is the advice), and the
    /// `store NAME:` its row says already is not repeated. (The table was 99 characters wide
    /// with every store ok and 115 with a failure, whose advice was cut off.)
    @Test func theTableFitsAnEightyColumnTerminalAndKeepsTheAdvice() {
        let notFound = "store tasks: HTTP 404 Not Found at https://api.example.com/parse/classes/Task?limit=100&order=updatedAt (page 1): the configured URL names nothing; check url = in the store's section"
        let allOK = [Self.row("contacts-family", cursor: "http://dav.example.com/sync/0123456789abcdef"),
                     Self.row("demo", cursor: #"{"highWater":"2026-11-24T10:00:00Z"}"#)]
        for rows in [allOK, allOK + [Self.row("tasks", state: "failing", problem: notFound)]] {
            let table = StoreStatus.table(rows, width: 80)
            let lines = table.split(separator: "\n", omittingEmptySubsequences: false)
            #expect(lines.allSatisfy { $0.count <= 80 }, "\(table)")
            for row in rows { #expect(table.contains(row.store) && table.contains(row.state)) }
        }
        let table = StoreStatus.table(allOK + [Self.row("tasks", state: "failing", problem: notFound)], width: 80)
        let words = table.split(whereSeparator: { $0 == " " || $0 == "\n" }).joined(separator: " ")
        #expect(words.contains("the configured URL names nothing; check url = in the store's section"), "\(table)")
        #expect(!table.contains("store tasks:"), "\(table)")
        // A pipe gets every column, nothing wrapped, and no prefix either.
        let piped = StoreStatus.table([Self.row("tasks", state: "failing", problem: notFound)])
        #expect(piped.split(separator: "\n").count == 2 && piped.hasSuffix("check url = in the store's section") && !piped.contains("store tasks:"))
    }

    @Test func longWordsAndLinesAreWrappedToTheWidth() {
        let lines = StoreStatus.wrap("a " + String(repeating: "x", count: 50) + " b c", width: 20, indent: 2)
        #expect(lines.allSatisfy { $0.count <= 20 })
        #expect(lines.dropFirst().allSatisfy { $0.hasPrefix("  ") })
        #expect(lines.joined().filter { $0 == "x" }.count == 50)
    }

    /// Whatever a store's sync state holds, `incomplete` comes with its reason: in `--json`,
    /// in the table's PROBLEM column, and for `ferry status --check`, which exits 2 for it.
    /// (Records left to fetch again, with no pull's words since, once made it `incomplete`
    /// with the reason `-` and `"incomplete": null`.)
    @Test func incompleteAlwaysSaysWhy() throws {
        var checked = 0
        for words in [nil, "", "deleted records not swept: the id listing did not complete"] as [String?] {
            for pending in [0, 2] {
                for toReadBack in [0, 1] {
                    for (queued, refused, held) in [(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1)] {
                        var state = SyncState(store: "s", lastAttempt: Date(timeIntervalSince1970: 1_000), lastSuccess: Date(timeIntervalSince1970: 1_000))
                        state.incomplete = words
                        state.pendingRecords = pending
                        state.createsToReadBack = toReadBack
                        state.localWritesQueued = queued
                        state.localWritesRefused = refused
                        state.openConflicts = held
                        let row = StoreStatus(store: "s", kind: "carddav", state: state, now: Date(timeIntervalSince1970: 2_000))
                        let json = try #require(try JSONSerialization.jsonObject(with: StoreStatus.makeEncoder().encode(row)) as? [String: Any])
                        let problem = try #require(StoreStatus.table([row]).split(separator: "\n").last?.split(separator: " ").last)
                        if row.state == "incomplete" {
                            #expect((json["incomplete"] as? String).map { !$0.isEmpty } == true, "\(state)")
                            #expect(problem != "-", "\(state)")
                            #expect(StoreStatus.checkExitCode([row]) == .incomplete)
                        } else {
                            #expect(row.state == "ok" && row.incomplete == nil && problem == "-", "\(state)")
                            #expect(StoreStatus.checkExitCode([row]) == .success)
                        }
                        // Nothing but a push's creates waiting to be read back: nothing missing.
                        let lacksNothing = (words ?? "").isEmpty && pending + queued + refused + held == 0
                        #expect((row.state == "ok") == lacksNothing, "\(state)")
                        checked += 1
                    }
                }
            }
        }
        #expect(checked == 48)
    }

    @Test func cursorsAreShownInBrief() {
        #expect(StoreStatus.briefCursor(#"{"highWater":"2026-11-24 10:00:00.123456"}"#) == "2026-11-24 10:00:...")
        #expect(StoreStatus.briefCursor("http://radicale.example.com/sync/abc") == "abc")
        #expect(StoreStatus.briefCursor("{}") == "-")
        #expect(StoreStatus.briefCursor(#"{"etag":"\"v1\"","firstURL":"https://api.stripe.com/v1/customers"}"#) == "-")
        #expect(StoreStatus.briefCursor(#"{"delta":"https://graph.example.com/v1.0/me/contacts/delta?$deltatoken=abc"}"#) == "delta?$deltatoken...")
        #expect(StoreStatus.briefCursor(#"{"delta":"eyJzdGFtcCI6ICIyMDI0LTAx"}"#) == "eyJzdGFtcCI6ICIyM...")
    }
}
