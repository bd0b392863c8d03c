import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// ferryd's Prometheus metrics: the exposition format as written, `metrics-listen` as parsed, and the figures a pass leaves.
@Suite("Metrics")
struct MetricsTests {
    // MARK: - Exposition

    @Test func numbersAreWrittenAsTheFormatWantsThem() {
        #expect(PrometheusExposition.number(3) == "3")
        #expect(PrometheusExposition.number(0) == "0")
        #expect(PrometheusExposition.number(2.5) == "2.5")
        #expect(PrometheusExposition.number(1_795_539_194.689) == "1795539194.689")
        #expect(PrometheusExposition.number(.infinity) == "+Inf")
        #expect(PrometheusExposition.number(.nan) == "NaN")
    }

    @Test func labelValuesAndHelpAreEscaped() {
        #expect(PrometheusExposition.escapeLabel(#"a"b\c"# + "\nd") == #"a\"b\\c\nd"#)
        #expect(PrometheusExposition.escapeHelp("one\\two\nthree") == #"one\\two\nthree"#)
    }

    @Test func aHistogramIsCumulative_withInfSumAndCount() {
        var histogram = PrometheusExposition.Histogram(bounds: [0.1, 1])
        for value in [0.05, 0.5, 0.7, 3.0] { histogram.observe(value) }
        var out = PrometheusExposition()
        out.family("ferry_pass_duration_seconds", .histogram, help: "How long.") { $0.histogram([("store", "s")], histogram) }
        #expect(out.text == """
            # HELP ferry_pass_duration_seconds How long.
            # TYPE ferry_pass_duration_seconds histogram
            ferry_pass_duration_seconds_bucket{store="s",le="0.1"} 1
            ferry_pass_duration_seconds_bucket{store="s",le="1"} 3
            ferry_pass_duration_seconds_bucket{store="s",le="+Inf"} 4
            ferry_pass_duration_seconds_sum{store="s"} 4.25
            ferry_pass_duration_seconds_count{store="s"} 4

            """)
    }

    @Test func aFamilyWithoutSamplesIsLeftOut() {
        var out = PrometheusExposition()
        out.family("ferry_last_success_timestamp_seconds", .gauge, help: "When.") { _ in }
        #expect(out.text.isEmpty)
    }

    // MARK: - metrics-listen

    @Test(arguments: [
        ("127.0.0.1:9466", "127.0.0.1:9466", true),
        ("[::1]:9466", "[::1]:9466", true),
        ("0.0.0.0:9466", "0.0.0.0:9466", false),
        (" 10.1.2.3:80 ", "10.1.2.3:80", false),
    ])
    func anEndpointIsAnAddressAndAPort(_ text: String, _ written: String, _ loopback: Bool) throws {
        let endpoint = try MetricsEndpoint.parse(text).get()
        #expect(endpoint.description == written)
        #expect(endpoint.isLoopback == loopback)
    }

    @Test(arguments: [
        ("localhost:9466", "not an IP address"),
        ("127.0.0.1", "expected ADDRESS:PORT"),
        ("127.0.0.1:0", "not a port"),
        ("127.0.0.1:70000", "not a port"),
        ("::1:9466", "in brackets"),
        ("[::1]9466", "in brackets"),
    ])
    func anythingElseIsRefusedSayingWhy(_ text: String, _ words: String) {
        guard case .failure(let failure) = MetricsEndpoint.parse(text) else {
            Issue.record("\(text) was accepted")
            return
        }
        #expect(failure.description.contains(words), "\(failure)")
    }

    @Test func theConfigurationNamesTheLineOfABadEndpoint_andWarnsOfAnExposedOne() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("ferry.conf")
        try "[ferry]\ndatabase = \(directory.path("f.db"))\nmetrics-listen = localhost:9466\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect {
            try ConfigurationLoader.load(path: path, environment: [:])
        } throws: { error in
            "\(error)".contains("ferry.conf:3") && "\(error)".contains("metrics-listen")
        }
        try "[ferry]\ndatabase = \(directory.path("f.db"))\nmetrics-listen = 0.0.0.0:9466\n".write(toFile: path, atomically: true, encoding: .utf8)
        let loaded = try ConfigurationLoader.load(path: path, environment: [:])
        #expect(loaded.global.metricsListen?.port == 9466)
        #expect(loaded.warnings.contains { $0.line == 3 && $0.message.contains("reachable from other machines") })
    }

    // MARK: - Figures

    static func report(_ store: String, inserted: Int, complete: Bool = true) -> PassReport {
        var report = PassReport(store: store, pass: 1, trigger: .scheduled)
        report.counts.inserted = inserted
        report.recordCount = inserted
        report.duration = .milliseconds(30)
        if !complete { report.gaps = [.localChangesNotPushed(queued: 0, held: 2, refused: 1, reason: nil)] }
        return report
    }

    @Test func aPassLeavesItsCountsAndTheStoresStanding() {
        let metrics = DaemonMetrics(databasePath: "/nonexistent/ferry.db", version: "9.9", started: Date(timeIntervalSince1970: 100))
        metrics.retain(stores: ["quotes", "cards"])
        metrics.refresh(.init(running: 1, waiting: 3))
        let next = Date(timeIntervalSince1970: 2_000_000_000)
        metrics.passFinished("quotes", outcome: .success(Self.report("quotes", inserted: 7)), schedule: .init(nextPass: next, consecutiveFailures: 0),
                             at: Date(timeIntervalSince1970: 1_000))
        metrics.passFinished("cards", outcome: .success(Self.report("cards", inserted: 2, complete: false)), schedule: .init(nextPass: nil, consecutiveFailures: 0))
        metrics.passFinished("cards", outcome: .failure(SyncError(.httpStatus(503), store: "cards", message: "unavailable")), schedule: .init(nextPass: next, consecutiveFailures: 1))
        let text = metrics.render()
        for line in [
            #"ferry_build_info{version="9.9"} 1"#,
            "ferry_start_time_seconds 100",
            "ferry_stores 2",
            "ferry_passes_running 1",
            "ferry_passes_waiting 3",
            #"ferry_passes_total{store="quotes",outcome="ok"} 1"#,
            #"ferry_passes_total{store="cards",outcome="incomplete"} 1"#,
            #"ferry_passes_total{store="cards",outcome="failed"} 1"#,
            #"ferry_records_changed_total{store="quotes",change="inserted"} 7"#,
            #"ferry_last_success_timestamp_seconds{store="quotes"} 1000"#,
            #"ferry_next_pass_timestamp_seconds{store="quotes"} 2000000000"#,
            #"ferry_consecutive_failures{store="cards"} 1"#,
            #"ferry_store_state{store="cards",state="failing"} 1"#,
            #"ferry_store_state{store="quotes",state="ok"} 1"#,
            #"ferry_local_changes{store="cards",state="held"} 2"#,
            #"ferry_local_changes{store="cards",state="refused"} 1"#,
            #"ferry_pass_duration_seconds_count{store="quotes"} 1"#,
            #"ferry_requests_total{store="quotes"} 0"#,
        ] {
            #expect(text.contains(line + "\n"), "missing: \(line)")
        }
        #expect(!text.contains("ferry_replica_size_bytes"), "no file, no sample")
        // Every family once, its HELP and TYPE before its samples.
        let types = text.split(separator: "\n").filter { $0.hasPrefix("# TYPE ") }.map { $0.split(separator: " ")[2] }
        #expect(types.count == Set(types).count)
        metrics.retain(stores: ["quotes"])
        #expect(!metrics.render().contains(#"store="cards""#), "a store removed by a reload leaves the metrics")
    }

    /// One histogram per trigger for the whole process (per store it would be thousands of
    /// series): what tells an operator the daemon keeps its schedule.
    @Test func startDelaysAreOneHistogramPerTrigger() {
        let metrics = DaemonMetrics(databasePath: "/nonexistent/ferry.db")
        metrics.retain(stores: ["quotes"])
        #expect(!metrics.render().contains("ferry_pass_start_delay_seconds"), "no pass yet, no histogram")
        metrics.passStarted(trigger: .scheduled, delay: .milliseconds(80))
        metrics.passStarted(trigger: .scheduled, delay: .milliseconds(1500))
        metrics.passStarted(trigger: .onDemand, delay: .seconds(40))
        metrics.passStarted(trigger: .scheduled, delay: .milliseconds(-3))
        let text = metrics.render()
        for line in [
            #"ferry_pass_start_delay_seconds_bucket{trigger="scheduled",le="0.1"} 2"#,
            #"ferry_pass_start_delay_seconds_bucket{trigger="scheduled",le="1"} 2"#,
            #"ferry_pass_start_delay_seconds_bucket{trigger="scheduled",le="2"} 3"#,
            #"ferry_pass_start_delay_seconds_count{trigger="scheduled"} 3"#,
            #"ferry_pass_start_delay_seconds_bucket{trigger="on-demand",le="30"} 0"#,
            #"ferry_pass_start_delay_seconds_bucket{trigger="on-demand",le="60"} 1"#,
        ] {
            #expect(text.contains(line + "\n"), "missing: \(line)")
        }
        #expect(!text.contains(#"trigger="backfill""#))
    }

    @Test func aRestartStartsFromWhatTheReplicaRecorded() {
        let metrics = DaemonMetrics(databasePath: "/nonexistent/ferry.db")
        var state = SyncState(store: "quotes", lastAttempt: Date(timeIntervalSince1970: 60), lastSuccess: Date(timeIntervalSince1970: 50), recordCount: 42)
        state.openConflicts = 3
        metrics.retain(stores: ["quotes", "new"])
        metrics.seed(from: [state, SyncState(store: "new"), SyncState(store: "removed", lastSuccess: Date())])
        let text = metrics.render()
        #expect(text.contains(#"ferry_last_success_timestamp_seconds{store="quotes"} 50"# + "\n"))
        #expect(text.contains(#"ferry_records{store="quotes"} 42"# + "\n"))
        #expect(text.contains(#"ferry_local_changes{store="quotes",state="held"} 3"# + "\n"))
        #expect(text.contains(#"ferry_store_state{store="new",state="never_synced"} 1"# + "\n"))
        #expect(!text.contains(#"store="removed""#), "a store no longer configured is not brought back")
    }
}
