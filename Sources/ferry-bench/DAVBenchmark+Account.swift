import ArgumentParser
import FerryKit
import Foundation
import Logging

/// `ferry-bench dav --collections N`: a whole account on Xandikos (N address books of
/// `--cards` cards, N calendars of `--events` events), synced by one `dav-account` store from
/// the server's root, against vdirsyncer 0.21 discovering the same account (two pairs, carddav
/// and caldav, `collections = ["from a", "from b"]`, into filesystem storages). Goals: first
/// sync ≥ 8×, no-change sync ≥ 15×. Both sides run with their defaults (Ferry's passes run
/// `max-concurrent-passes` at once). What the server alone needs for Ferry's requests (each
/// collection's listing and query, on one connection) is printed beside them.
extension DAVBenchmark {
    func runAccount() throws {
        let server = try startServer(events: events, collections: collections)
        defer { server.stop() }
        let base = "http://127.0.0.1:\(server.port)"
        let books = [base + "/user/contacts/addressbook/"] + (1..<collections).map { base + "/user/contacts/addressbook-\($0)/" }
        let calendars = [base + "/user/calendars/calendar/"] + (1..<collections).map { base + "/user/calendars/calendar-\($0)/" }
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-bench-dav-account-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        print("xandikos on port \(server.port): \(collections) address books of \(cards) cards, \(collections) calendars of \(events) events")

        let cold = try accountAlone(books: books, calendars: calendars, in: work)
        print(String(format: "server cold: every collection's listing + query after start took %.2f s", cold))

        _ = try ferryAccountRound(base: base, in: work, label: "warm-up")
        _ = try vdirsyncerAccountRound(base: base, in: work, label: "warm-up")
        var ferry: [(first: Double, again: Double)] = []
        var vdir: [(first: Double, again: Double)] = []
        for round in 1...max(1, rounds) {
            let f = try ferryAccountRound(base: base, in: work, label: "\(round)")
            let v = try vdirsyncerAccountRound(base: base, in: work, label: "\(round)")
            ferry.append(f)
            vdir.append(v)
            print(String(format: "round %d: ferry first %.2f s, no-change %.3f s; vdirsyncer first %.2f s, no-change %.3f s",
                         round, f.first, f.again, v.first, v.again))
        }
        let ferryFirst = CoreBenchmark.median(ferry.map(\.first))
        let ferryAgain = CoreBenchmark.median(ferry.map(\.again))
        let vdirFirst = CoreBenchmark.median(vdir.map(\.first))
        let vdirAgain = CoreBenchmark.median(vdir.map(\.again))
        print(String(format: "median     ferry first %.2f s, no-change %.3f s; vdirsyncer first %.2f s, no-change %.3f s", ferryFirst, ferryAgain, vdirFirst, vdirAgain))
        let alone = try accountAlone(books: books, calendars: calendars, in: work)
        print(String(format: "server     alone: every collection's listing + query, one after another on one connection, %.2f s", alone))
        print(String(format: "ratio      first %.1f× (goal ≥ 8×), no-change %.1f× (goal ≥ 15×)", vdirFirst / ferryFirst, vdirAgain / ferryAgain))
        print("verdict first sync: \(vdirFirst / ferryFirst >= 8 ? "met" : "not met"); no-change sync: \(vdirAgain / ferryAgain >= 15 ? "met" : "not met")")
    }

    /// `ferry sync` of a `dav-account` store into a new database, then again without changes.
    private func ferryAccountRound(base: String, in work: URL, label: String) throws -> (first: Double, again: Double) {
        let database = work.appendingPathComponent("ferry-\(label).db").path
        let global = GlobalConfiguration(databasePath: database, runtimeDirectory: work.path)
        var logger = Logger(label: "ferry.bench")
        logger.logLevel = .warning
        var options = DAVAccountOptions()
        options.multigetBatch = batch
        options.selection.maximum = 2 * collections
        let account = StoreConfiguration(name: "account", url: base + "/", options: options, location: ConfigurationLocation(file: "bench", line: 1))
        let configuration = FerryConfiguration(global: global, stores: [account])
        func pass() throws -> (Double, [String: PassReport]) {
            let sync = try OneShotSync(configuration: configuration, storeNames: [], logger: logger)
            let started = ContinuousClock.now
            let results = sync.run(refresh: .milliseconds(100)) { _ in }
            let seconds = (ContinuousClock.now - started).seconds
            var reports: [String: PassReport] = [:]
            for (store, result) in results { reports[store] = try result.get() }
            return (seconds, reports)
        }
        let (first, firstReports) = try pass()
        let records = firstReports.filter { $0.key != "account" }.values.reduce(0) { $0 + $1.counts.inserted }
        guard firstReports["account"]?.collections == 2 * collections, records == collections * (cards + events) else {
            throw ValidationError("Ferry's first sync found \(firstReports["account"]?.collections ?? 0) collections and stored \(records) records, of \(2 * collections) and \(collections * (cards + events))")
        }
        let (again, againReports) = try pass()
        let collectionReports = againReports.filter { $0.key != "account" }.values
        // Discovery lists each collection's sync-token; a collection whose token is the stored
        // one is not asked again.
        guard collectionReports.count == 2 * collections, collectionReports.allSatisfy({ $0.unchanged && $0.requests <= 1 }) else {
            throw ValidationError("Ferry's no-change sync asked a collection more than once")
        }
        if label == "1" {
            let requests = firstReports.values.reduce(0) { $0 + $1.requests }
            let againRequests = againReports.values.reduce(0) { $0 + $1.requests }
            print("ferry      first sync: \(requests) requests (discovery \(firstReports["account"]?.requests ?? 0)); no-change sync: \(againRequests) requests")
        }
        try? FileManager.default.removeItem(atPath: database)
        return (first, again)
    }

    /// `vdirsyncer discover` (answering yes to creating each local collection), then `sync` of
    /// both pairs into new directories, then `sync` again.
    private func vdirsyncerAccountRound(base: String, in work: URL, label: String) throws -> (first: Double, again: Double) {
        let directory = work.appendingPathComponent("vdirsyncer-\(label)")
        defer { try? FileManager.default.removeItem(at: directory) }
        for sub in ["contacts", "calendars", "status"] {
            try FileManager.default.createDirectory(at: directory.appendingPathComponent(sub), withIntermediateDirectories: true)
        }
        var config = "[general]\nstatus_path = \"\(directory.path)/status/\"\n"
        for (pair, type, ext) in [("contacts", "carddav", ".vcf"), ("calendars", "caldav", ".ics")] {
            config += """

                [pair \(pair)]
                a = "\(pair)_remote"
                b = "\(pair)_local"
                collections = ["from a", "from b"]
                conflict_resolution = "a wins"

                [storage \(pair)_remote]
                type = "\(type)"
                url = "\(base)/"

                [storage \(pair)_local]
                type = "filesystem"
                path = "\(directory.path)/\(pair)/"
                fileext = "\(ext)"

                """
        }
        let path = directory.appendingPathComponent("config").path
        try config.write(toFile: path, atomically: true, encoding: .utf8)
        try vdirsyncer(path, ["discover"], answer: String(repeating: "y\n", count: 4 * collections))
        let (first, _) = try timed { try vdirsyncer(path, ["sync"]) }
        var stored = 0
        for sub in ["contacts", "calendars"] {
            let root = directory.appendingPathComponent(sub)
            for collection in try FileManager.default.contentsOfDirectory(atPath: root.path) {
                stored += try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent(collection).path).count
            }
        }
        guard stored == collections * (cards + events) else {
            throw ValidationError("vdirsyncer stored \(stored) of \(collections * (cards + events)) items")
        }
        let (again, _) = try timed { try vdirsyncer(path, ["sync"]) }
        return (first, again)
    }

    /// curl sending, for every collection in turn, the listing and the query Ferry sends, on
    /// one keep-alive connection, answers dropped: seconds in all.
    private func accountAlone(books: [String], calendars: [String], in work: URL) throws -> Double {
        let directory = work.appendingPathComponent("alone-account")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var requests: [HTTPRequest] = []
        for (url, kind) in books.map({ ($0, StoreKind.carddav) }) + calendars.map({ ($0, StoreKind.caldav) }) {
            guard let collection = WebDAVCollection(url: url) else { throw ValidationError("not a collection URL: \(url)") }
            let builder = WebDAVRequestBuilder(collection: collection, kind: kind)
            requests += [builder.syncCollection(token: ""), builder.queryAll()]
        }
        return try curlAlone(requests, in: directory)
    }
}
