import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// What `ferry sync` prints into a pipe a person reads: each store's summary once, on stdout,
/// with right plurals; nothing on stderr for a pass that went well (no log lines, no fields,
/// no Swift type names: those are for `--verbose`, `--json` and the journal).
@Suite(.enabled(if: FileManager.default.isExecutableFile(atPath: FerrydProcessTests.binary("ferry")), "build ferry first: swift build"))
struct PipedOutputTests {
    /// Durations vary: `in 0.02 s` becomes `in N s`.
    static func golden(_ text: String) -> String {
        text.replacingOccurrences(of: #"in [0-9]+\.[0-9]+ s"#, with: "in N s", options: .regularExpression)
    }

    @Test func aSyncPrintsEachStoresSummaryOnceAndNothingElse() throws {
        let directory = try TemporaryDirectory()
        let configuration = TestServer.repositoryRoot.appendingPathComponent("etc/ferry/ferry.conf").path
        let database = directory.path("demo.db")
        let first = try UsageErrorTests.run(["sync", "-c", configuration, "--database", database])
        #expect(first.status == 0)
        #expect(first.err.isEmpty, "\(first.err)")
        #expect(Self.golden(first.out) == """
            store demo: 1000 inserted, 0 updated, 0 deleted; 1000 records, 5 pages in N s
            database: \(database)

            """)
        let again = try UsageErrorTests.run(["sync", "-c", configuration, "--database", database])
        #expect(Self.golden(again.out).hasPrefix("store demo: 0 inserted, 0 updated, 0 deleted; 1000 records, 5 pages (5 unchanged) in N s\n"))
        #expect(again.err.isEmpty)
    }

    @Test func countsAreSingularForOne() {
        var report = PassReport(store: "s", pass: 1, trigger: .onDemand)
        report.recordCount = 1
        report.pages = 1
        #expect(report.summary.contains("; 1 record, 1 page in"))
        report.collections = 1
        report.requests = 1
        #expect(report.summary.hasPrefix("store s: 1 collection, 1 request in"))
    }
}
