import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// Each kind as the contract suite (``KindContractTests``) drives it: its real server with
/// data, a way to change that data, and stores whose remote refuses the credentials or rate
/// limits.
enum ContractKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case parse, json, carddav, caldav

    var testDescription: String { rawValue }

    /// The kind's remote, freshly started (nil: its server is not installed here, which is a
    /// skip on a developer's machine and a failure in CI).
    func start() throws -> (any ContractRemote)? {
        switch self {
        case .parse: return try ParseRemote()
        case .json: return try JSONRemote()
        case .carddav, .caldav:
            guard DAVServer.shouldRun else { return nil }
            return try DAVRemote(calendar: self == .caldav)
        }
    }
}

/// One kind's remote for the contract suite.
protocol ContractRemote: AnyObject {
    /// A store over data that takes several requests.
    var store: StoreConfiguration { get }
    /// Batches a first sync hands over at least.
    var minimumFirstSyncBatches: Int { get }
    /// Updates and creates records (and deletes, where the kind reports deletions).
    func change() throws
    /// A store whose remote refuses its credentials.
    func refusingCredentials() throws -> StoreConfiguration
    /// A store whose remote answers 429 with `Retry-After: <seconds>`.
    func rateLimiting(retryAfter seconds: Int) throws -> StoreConfiguration
    /// Adjusts a source before its pass starts (on the pass's loop).
    func prepare(_ source: any RemoteSource)
}

extension ContractRemote {
    func prepare(_ source: any RemoteSource) {}
}

/// A JSON store whose URL is the fault server's answer with `status` (a collection that always
/// answers so).
private func faultStore(kind: String, fault: TestServer, status: Int, query: String = "", extra: [String: String] = [:]) throws -> StoreConfiguration {
    try configuredStore(name: "faulty", kind: kind, url: fault.baseURL + "/status/\(status)" + query, extra)
}

final class ParseRemote: ContractRemote {
    let server: ParseTestServer

    init() throws {
        server = try ParseTestServer.start()
        try server.admin("seed", ["class": "Quote", "count": 300, "seed": 3])
    }

    var store: StoreConfiguration { server.store(pageSize: 50) }
    var minimumFirstSyncBatches: Int { 6 }

    func change() throws {
        // Parse reports no deletions (a sweep finds them, outside this contract).
        try server.admin("mutate", ["class": "Quote", "update": 40, "create": 15, "delete": 0])
    }

    func refusingCredentials() throws -> StoreConfiguration { server.store(key: "not-the-key") }

    func rateLimiting(retryAfter seconds: Int) throws -> StoreConfiguration {
        try server.admin("fault", ["next": 1, "status": 429, "retry_after": seconds])
        return server.store(pageSize: 50)
    }
}

final class JSONRemote: ContractRemote {
    let pages: TestServer
    let fault: TestServer
    let store: StoreConfiguration

    init() throws {
        pages = try TestServer.python("json_pages_server.py", arguments: ["--count", "250"])
        fault = try TestServer.fault()
        // Sorted by the version and filtered by it: every page commits its cursor.
        store = try configuredStore(kind: "json", url: pages.baseURL + "/nexturl", [
            "records-path": "items", "pagination": "next-url:next", "updated-param": "since", "page-size-param": "per_page",
            "page-size": "40",
        ])
    }

    var minimumFirstSyncBatches: Int { 6 }

    /// Pages are gathered into batches by size and time; the suite wants page-sized batches
    /// (more cursors to resume from), which a slow API gets anyway.
    func prepare(_ source: any RemoteSource) {
        let json = source as? JSONCollectionSource
        json?.batchTarget = 1
    }

    func change() throws {
        _ = try pages.control("/admin/update", method: "POST", body: #"{"ids":[3,40,41,42,77,120,121,200,249]}"#)
        _ = try pages.control("/admin/create", method: "POST", body: #"{"count":12}"#)
    }

    func refusingCredentials() throws -> StoreConfiguration {
        try faultStore(kind: "json", fault: fault, status: 401, extra: ["pagination": "none"])
    }

    func rateLimiting(retryAfter seconds: Int) throws -> StoreConfiguration {
        try faultStore(kind: "json", fault: fault, status: 429, query: "?retry_after=\(seconds)", extra: ["pagination": "none"])
    }
}

final class DAVRemote: ContractRemote {
    let server: DAVServer
    let fault: TestServer
    let calendar: Bool

    init(calendar: Bool) throws {
        self.calendar = calendar
        server = try DAVServer(.xandikos, cards: calendar ? 0 : 60, events: calendar ? 40 : 0)
        fault = try TestServer.fault()
    }

    /// Incremental passes fetch by multiget, four members a batch.
    var store: StoreConfiguration { server.store(calendar ? .caldav : .carddav, batch: 4) }
    var minimumFirstSyncBatches: Int { 1 }

    func change() throws {
        if calendar {
            for j in 100..<106 { try server.put(server.calendarPath + "new-\(j).ics", Self.event(j, summary: "New \(j)"), contentType: "text/calendar; charset=utf-8") }
            for j in [1, 2, 3, 10, 11] { try server.put(server.calendarPath + "event-\(j).ics", Self.event(j, summary: "Moved \(j)"), contentType: "text/calendar; charset=utf-8") }
            for j in [20, 21, 22] { try server.delete(server.calendarPath + "event-\(j).ics") }
        } else {
            for i in 100..<106 { try server.put(server.addressBookPath + "new-\(i).vcf", DAVServer.vCard(uid: "new-\(i)", name: "New \(i)", email: "new\(i)@example.com")) }
            for i in [1, 2, 3, 10, 11] { try server.put(server.addressBookPath + "card-\(i).vcf", DAVServer.vCard(uid: "ferry-card-\(i)", name: "Renamed \(i)", email: "r\(i)@example.com")) }
            for i in [20, 21, 22] { try server.delete(server.addressBookPath + "card-\(i).vcf") }
        }
    }

    func refusingCredentials() throws -> StoreConfiguration {
        let radicale = try DAVServer.shared(.radicale)
        return radicale.store(calendar ? .caldav : .carddav, password: "wrong")
    }

    func rateLimiting(retryAfter seconds: Int) throws -> StoreConfiguration {
        // The collection URL gets a '/' appended: a last parameter absorbs it.
        try faultStore(kind: calendar ? "caldav" : "carddav", fault: fault, status: 429, query: "?retry_after=\(seconds)&end=")
    }

    static func event(_ j: Int, summary: String) -> String {
        ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//Ferry tests//EN", "BEGIN:VEVENT", "UID:ferry-event-\(j)",
         "DTSTAMP:20240101T000000Z", "SUMMARY:\(summary)", "DTSTART:20240201T100000Z", "DTEND:20240201T110000Z",
         "END:VEVENT", "END:VCALENDAR"].joined(separator: "\r\n") + "\r\n"
    }
}
