import Foundation
import Logging
import Testing
@testable import FerryKit

/// What ferryd shows of itself, read as a spec: the STATUS= line for each state a store can
/// be in, when a refresh that a pass's end asks for happens, and what is sent or written only
/// when it changed.
@Suite struct StatusPublisherTests {
    private static let now = ContinuousClock.now

    private static func snapshot(_ names: [String], _ change: (inout Scheduler.Snapshot) -> Void = { _ in }) -> Scheduler.Snapshot {
        var snapshot = Scheduler.Snapshot()
        snapshot.stores = names.count
        snapshot.names = names.count <= Scheduler.Snapshot.listedStores ? names.sorted() : []
        change(&snapshot)
        return snapshot
    }

    // MARK: - The line

    @Test(arguments: [
        (snapshot([]), "no stores; 0 records"),
        (snapshot(["quotes"]) { $0.records = 12 }, "quotes ok; 12 records"),
        (snapshot(["a", "b"]) { $0.failing = ["b"]; $0.causes = ["b": "HTTP 503"] }, "a ok, b FAILING (HTTP 503); 0 records"),
        (snapshot(["a"]) { $0.neverSynced = ["a"] }, "a never synced; 0 records"),
        (snapshot(["a"]) { $0.neverSynced = ["a"]; $0.running = ["a"] }, "a first sync running; syncing a; 0 records"),
        (snapshot(["a"]) { $0.incomplete = ["a": "2 records could not be stored"] }, "a INCOMPLETE (2 records could not be stored); 0 records"),
        (snapshot(["a"]) { $0.lastPassFinished = now - .seconds(3) }, "a ok; last pass 3 s ago; 0 records"),
        (snapshot(["a"]) { $0.replicaProblem = "replica disk is full" }, "REPLICA DISK IS FULL (/var/lib/ferry/ferry.db); a ok; 0 records"),
    ])
    func eachStateReads(_ snapshot: Scheduler.Snapshot, _ expected: String) {
        #expect(StatusLine(databasePath: "/var/lib/ferry/ferry.db").render(snapshot, now: Self.now) == expected)
    }

    @Test func pastEightStoresItCounts_andNamesEightOfEachTroubleAtMost() {
        let names = (1...20).map { "s\($0)" }
        let snapshot = Self.snapshot(names) {
            $0.failing = Array(names.prefix(10))
            $0.causes = Dictionary(uniqueKeysWithValues: names.prefix(10).map { ($0, "HTTP 500") })
            $0.incomplete = ["s11": "gaps"]
            $0.neverSynced = ["s12", "s13"]
            $0.running = Array(names.suffix(9))
        }
        let line = StatusLine(databasePath: "r.db").render(snapshot, now: Self.now)
        let failing = names.prefix(8).map { "\($0) FAILING (HTTP 500)" }.joined(separator: ", ")
        #expect(line == "20 stores: 7 ok, 10 FAILING (\(failing), ...), 1 INCOMPLETE (s11), 2 not synced yet; syncing \(names.suffix(9).prefix(8).joined(separator: ", ")) and 1 more; 0 records")
    }

    @Test func aRefusedReloadAndUnservedMetricsStayInTheLine() {
        var line = StatusLine(databasePath: "r.db")
        line.reloadProblem = "ferry.conf:3: unknown key intervall"
        line.metricsProblem = "cannot listen on 127.0.0.1:9108: address in use"
        #expect(line.render(Self.snapshot(["a"]), now: Self.now)
            == "a ok; 0 records; reload failed: ferry.conf:3: unknown key intervall; METRICS NOT SERVED: cannot listen on 127.0.0.1:9108: address in use")
    }

    // MARK: - Pacing

    @Test func aRefreshAskedForWithinTheGapWaitsForItsEnd_andOnlyOneWaits() {
        var pacing = RefreshPacing(gap: .seconds(1))
        let start = Self.now
        #expect(pacing.ask(now: start) == .now)
        pacing.refreshed(at: start)
        #expect(pacing.ask(now: start + .milliseconds(200)) == .at(start + .seconds(1)))
        #expect(pacing.ask(now: start + .milliseconds(300)) == .alreadyWaiting)
        pacing.refreshed(at: start + .seconds(1))
        #expect(pacing.ask(now: start + .milliseconds(2500)) == .now)
    }

    @Test func aRefreshNobodyAskedForStillCountsAsTheLast() {
        var pacing = RefreshPacing(gap: .seconds(1))
        pacing.refreshed(at: Self.now)
        #expect(pacing.ask(now: Self.now + .milliseconds(100)) == .at(Self.now + .seconds(1)))
    }

    // MARK: - Publishing

    private final class Recorder {
        var statuses: [String] = []
        var schedules: [[String: PublishedSchedule.Entry]] = []
        var unrecorded: [[String: UnrecordedFailures.Failure]] = []
        var failSchedule = false
    }

    private struct WriteFailed: Error {}

    private final class FakeSource: StatusPublisher.ScheduleSource {
        var revision = 0
        var entries: [String: PublishedSchedule.Entry] = [:]
        var built = 0
        func publishedEntries(now date: Date) -> [String: PublishedSchedule.Entry] {
            built += 1
            return entries
        }
    }

    private func publisher(_ recorder: Recorder) -> StatusPublisher {
        let outputs = StatusPublisher.Outputs(
            status: { recorder.statuses.append($0) },
            schedule: {
                if recorder.failSchedule { throw WriteFailed() }
                recorder.schedules.append($0)
            },
            unrecordedFailures: { recorder.unrecorded.append($0) })
        return StatusPublisher(line: StatusLine(databasePath: "r.db"), runtimeDirectory: "/run/ferry", outputs: outputs, logger: Logger(label: "test"))
    }

    @Test func statusIsSentOnlyWhenTheLineChanges() {
        let recorder = Recorder()
        let publisher = publisher(recorder)
        publisher.publish(Self.snapshot(["a"]), now: Self.now)
        publisher.publish(Self.snapshot(["a"]), now: Self.now)
        publisher.publish(Self.snapshot(["a"]) { $0.records = 1 }, now: Self.now)
        #expect(recorder.statuses == ["a ok; 0 records", "a ok; 1 records"])
    }

    @Test func unrecordedFailuresAreWrittenOnlyWhenTheyChange_anEmptySetToo() {
        let recorder = Recorder()
        let publisher = publisher(recorder)
        let failure = UnrecordedFailures.Failure(at: Date(timeIntervalSince1970: 0), message: "disk full")
        publisher.publish(Self.snapshot(["a"]), now: Self.now)
        publisher.publish(Self.snapshot(["a"]) { $0.unrecordedFailures = ["a": failure] }, now: Self.now)
        publisher.publish(Self.snapshot(["a"]) { $0.unrecordedFailures = ["a": failure] }, now: Self.now)
        publisher.publish(Self.snapshot(["a"]), now: Self.now)
        #expect(recorder.unrecorded == [["a": failure], [:]])
    }

    @Test func theScheduleIsBuiltAtMostOnceASecond_onlyWhenItMoved_andOnceAMinuteRegardless() {
        let recorder = Recorder()
        let publisher = publisher(recorder)
        let source = FakeSource()
        let entry = PublishedSchedule.Entry(nextPass: nil, running: true, failures: 0, cause: nil)
        source.entries = ["a": entry]
        let start = Self.now
        publisher.publishSchedule(of: source, now: start)
        source.revision = 1
        publisher.publishSchedule(of: source, now: start + .milliseconds(500))
        #expect(source.built == 1)
        publisher.publishSchedule(of: source, now: start + .seconds(1))
        #expect(source.built == 2)
        #expect(recorder.schedules == [["a": entry]], "the same entries are not written again")
        publisher.publishSchedule(of: source, now: start + .seconds(30))
        #expect(source.built == 2, "a schedule standing still is not built again")
        publisher.publishSchedule(of: source, now: start + .seconds(61))
        #expect(source.built == 3)
        source.entries = [:]
        source.revision = 2
        publisher.publishSchedule(of: source, now: start + .seconds(62))
        #expect(recorder.schedules == [["a": entry], [:]])
    }

    @Test func aScheduleThatCouldNotBeWrittenIsTriedAgain() {
        let recorder = Recorder()
        let publisher = publisher(recorder)
        let source = FakeSource()
        source.entries = ["a": .init(nextPass: nil, running: true, failures: 0, cause: nil)]
        recorder.failSchedule = true
        publisher.publishSchedule(of: source, now: Self.now)
        recorder.failSchedule = false
        source.revision = 1
        publisher.publishSchedule(of: source, now: Self.now + .seconds(1))
        #expect(recorder.schedules == [source.entries])
    }
}
