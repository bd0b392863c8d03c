import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// A server a two-way store syncs with, as the randomized driver uses it: the store's section
/// (through the lossy proxy), bodies carrying a key and a value, another client's writes made
/// with the server's own API, and the records the server holds (read without Ferry where the
/// server can be asked directly).
protocol TwoWayRemote: AnyObject {
    var name: String { get }
    /// The store's table.
    var table: String { get }
    /// The store's section keys (kind, url and the rest) for `url`, with secrets in files
    /// under `directory`.
    func section(url: String, directory: TemporaryDirectory) throws -> [String: String]
    /// The server's URL the store syncs (the proxy forwards to it).
    var upstream: String { get }
    /// Whether another client can create a record under a key a local create chose (a vCard's
    /// UID names its member): a collision.
    var collides: Bool { get }
    /// Whether a record another client deleted before the replica listed it leaves a trace a
    /// pass can read (a sync-collection's removed member, an API's replayed create answer).
    /// Parse keeps none: a create whose answer was lost, deleted by another client before the
    /// next pass, is indistinguishable from one that never arrived, and is sent again.
    var seesDeletionsOfUnlistedRecords: Bool { get }

    /// A new record's body as a local insert writes it.
    func body(key: String, value: String) -> String
    /// A body the server itself refuses (a field name Parse does not take); nil when the
    /// server takes any well-formed body, and the proxy refuses in its place.
    func refusedBody(key: String, value: String) -> String?
    /// `body` with its value replaced.
    func replacingValue(in body: String, with value: String) -> String
    /// The key and value a body holds.
    func keyAndValue(of body: String) -> (key: String, value: String)?

    func otherCreate(key: String, value: String) throws
    /// Writes the one record holding `key`; false (nothing written) when the server holds none
    /// or several (keep-both's copies) at this moment.
    @discardableResult func otherUpdate(key: String, value: String) throws -> Bool
    /// Deletes the one record holding `key`; false as ``otherUpdate(key:value:)``.
    @discardableResult func otherDelete(key: String) throws -> Bool
    /// Key → values of every record the server holds (copies share a key).
    func records() throws -> [String: [String]]
    func stop()
}

extension TwoWayRemote {
    var seesDeletionsOfUnlistedRecords: Bool { true }

    /// Key → values of bodies.
    func grouped(_ bodies: some Sequence<String>) -> [String: [String]] {
        var grouped: [String: [String]] = [:]
        for body in bodies {
            guard let (key, value) = keyAndValue(of: body) else { continue }
            grouped[key, default: []].append(value)
        }
        return grouped.mapValues { $0.sorted() }
    }
}

/// A CardDAV address book, or a CalDAV calendar, on one of the DAV servers. A card's key is its
/// NICKNAME and its value its FN; an event's key is its LOCATION and its value its SUMMARY.
/// The key is also the UID a record is made with, so a create on both sides under one key is a
/// collision; keep-both's copies keep the key and get a UID of their own.
final class DAVTwoWayRemote: TwoWayRemote {
    let server: DAVServer
    let name: String
    let calendar: Bool
    let collides = true

    /// Radicale, DAViCal and SOGo list a member made and deleted since a sync token as removed
    /// (measured with curl); Xandikos's report leaves it out, and sabre/dav 1.8 has no report
    /// (its listing shows only what exists).
    let seesDeletionsOfUnlistedRecords: Bool

    init(_ kind: DAVServer.Kind, calendar: Bool = false) throws {
        server = try DAVServer(kind, cards: 0, events: 0)
        name = kind.rawValue + (calendar ? " caldav" : "")
        self.calendar = calendar
        seesDeletionsOfUnlistedRecords = ![.xandikos, .sabredav].contains(kind)
    }

    var table: String { calendar ? "calendar" : "contacts" }
    var upstream: String { server.baseURL }
    private var collection: String { calendar ? server.calendarPath : server.addressBookPath }
    private var keyProperty: String { calendar ? "LOCATION" : "NICKNAME" }
    private var valueProperty: String { calendar ? "SUMMARY" : "FN" }

    func section(url: String, directory: TemporaryDirectory) throws -> [String: String] {
        let password = directory.path("dav-password")
        try DAVServer.password.write(toFile: password, atomically: true, encoding: .utf8)
        chmod(password, 0o600)
        return ["kind": calendar ? "caldav" : "carddav", "url": url + collection, "username": DAVServer.username, "password": "file:" + password]
    }

    func body(key: String, value: String) -> String {
        if calendar {
            return "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Ferry//Two-way//EN\r\nBEGIN:VEVENT\r\nUID:\(key)\r\nDTSTAMP:20260101T000000Z\r\n"
                + "DTSTART:20260105T100000Z\r\nDTEND:20260105T110000Z\r\nLOCATION:\(key)\r\nSUMMARY:\(value)\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
        }
        return "BEGIN:VCARD\r\nVERSION:3.0\r\nUID:\(key)\r\nNICKNAME:\(key)\r\nFN:\(value)\r\nN:\(value);;;;\r\nEND:VCARD\r\n"
    }

    func refusedBody(key: String, value: String) -> String? { nil }

    func replacingValue(in body: String, with value: String) -> String {
        var lines = ContentLineText.unfoldedLines(body)
        for index in lines.indices {
            let name = lines[index].split(separator: ":", maxSplits: 1).first?.split(separator: ";").first?.uppercased() ?? ""
            if name == valueProperty { lines[index] = "\(valueProperty):\(value)" }
            if name == "N", !calendar { lines[index] = "N:\(value);;;;" }
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    func keyAndValue(of body: String) -> (key: String, value: String)? {
        var key: String?
        var value: String?
        for line in ContentLineText.unfoldedLines(body) {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].split(separator: ";").first?.uppercased() ?? ""
            if name == keyProperty { key = String(line[line.index(after: colon)...]) }
            if name == valueProperty { value = String(line[line.index(after: colon)...]) }
        }
        guard let key, let value else { return nil }
        return (key, value)
    }

    private func member(_ key: String) -> String { collection + key + (calendar ? ".ics" : ".vcf") }
    private var contentType: String { calendar ? "text/calendar; charset=utf-8" : "text/vcard; charset=utf-8" }

    func otherCreate(key: String, value: String) throws { try server.put(member(key), body(key: key, value: value), contentType: contentType) }

    /// A copy keep-both made has a UID (and a member) of its own: the member named by the key is
    /// the record itself.
    func otherUpdate(key: String, value: String) throws -> Bool {
        guard let body = try? server.get(member(key)) else { return false }
        try server.put(member(key), replacingValue(in: body, with: value), contentType: contentType)
        return true
    }

    func otherDelete(key: String) throws -> Bool {
        guard (try? server.get(member(key))) != nil else { return false }
        try server.delete(member(key))
        return true
    }

    /// Read by a pull into a replica of its own, straight from the server: the DAV servers
    /// differ in how they list, and Ferry's pull is what the pull contract suite proves.
    func records() throws -> [String: [String]] {
        let directory = try TemporaryDirectory()
        let database = try SharedDatabase(path: directory.path("remote.db"))
        defer { database.close() }
        let store = server.store(calendar ? .caldav : .carddav, name: table)
        _ = try ParsePushTests.run(store, database).get()
        return grouped(try database.write { try $0.liveBodies(of: table) }.values)
    }

    func stop() { server.stop() }
}

/// A Parse class on parse_server.py: the key and the value are fields of the object.
final class ParseTwoWayRemote: TwoWayRemote {
    let server: ParseTestServer
    let name = "parse"
    let table = "quotes"
    let collides = false
    let seesDeletionsOfUnlistedRecords = false

    /// Objects named by the client (`object-ids = client`, Parse Server's
    /// `allowCustomObjectId`), the configuration README gives for two-way: a create whose
    /// answer was lost is then found by its objectId even after another client changed it,
    /// where a lookup by fields and creation time finds nothing and the object is made twice.
    init() throws { server = try ParseTestServer.start(arguments: ["--allow-custom-object-id"]) }

    var upstream: String { server.server.baseURL }

    func section(url: String, directory: TemporaryDirectory) throws -> [String: String] {
        let key = directory.path("parse-key")
        try "rest-secret".write(toFile: key, atomically: true, encoding: .utf8)
        chmod(key, 0o600)
        return ["kind": "parse", "url": url + "/parse", "application-id": "ferry-test", "class": "Quote", "rest-api-key": "file:" + key,
                "lookback": "0", "object-ids": "client"]
    }

    func body(key: String, value: String) -> String { #"{"key":"\#(key)","text":"\#(value)"}"# }

    func refusedBody(key: String, value: String) -> String? { #"{"key":"\#(key)","text":"\#(value)","bad-name":1}"# }

    func replacingValue(in body: String, with value: String) -> String {
        guard var object = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any] else { return body }
        object["text"] = value
        return String(decoding: (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data(), as: UTF8.self)
    }

    func keyAndValue(of body: String) -> (key: String, value: String)? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any],
              let key = object["key"] as? String, let value = object["text"] as? String else { return nil }
        return (key, value)
    }

    private func curl(_ method: String, _ path: String, _ body: String? = nil) throws -> Data {
        var arguments = ["-sS", "-f", "-X", method, "-H", "X-Parse-Application-Id: ferry-test", "-H", "X-Parse-REST-API-Key: rest-secret"]
        if body != nil { arguments += ["-H", "Content-Type: application/json", "--data-binary", "@-"] }
        return try Shell.run("/usr/bin/curl", arguments + [server.mount + path], input: body.map { Data($0.utf8) })
    }

    private func objectIDs(_ key: String) throws -> [String] {
        try server.dump().filter { $0["key"] as? String == key }.compactMap { $0["objectId"] as? String }
    }

    func otherCreate(key: String, value: String) throws { _ = try curl("POST", "/classes/Quote", body(key: key, value: value)) }

    func otherUpdate(key: String, value: String) throws -> Bool {
        let ids = try objectIDs(key)
        guard ids.count == 1 else { return false }
        _ = try curl("PUT", "/classes/Quote/\(ids[0])", #"{"text":"\#(value)"}"#)
        return true
    }

    func otherDelete(key: String) throws -> Bool {
        let ids = try objectIDs(key)
        guard ids.count == 1 else { return false }
        _ = try curl("DELETE", "/classes/Quote/\(ids[0])")
        return true
    }

    func records() throws -> [String: [String]] {
        var grouped: [String: [String]] = [:]
        for object in try server.dump() {
            guard let key = object["key"] as? String, let value = object["text"] as? String else { continue }
            grouped[key, default: []].append(value)
        }
        return grouped.mapValues { $0.sorted() }
    }

    func stop() {}
}

/// json_pages_server.py's writable /items, pushed with templates and If-Match: the key and the
/// value are members of the item. With `digestVersions`, the store reads no version field
/// (`version-field = none`: a record's version is a digest of its JSON) and reads each record
/// before writing it instead of sending If-Match.
final class JSONTwoWayRemote: TwoWayRemote {
    let server: TestServer
    let name: String
    let table = "items"
    let collides = false
    let digestVersions: Bool

    init(digestVersions: Bool = false) throws {
        server = try TestServer.python("json_pages_server.py", arguments: ["--count", "0"])
        self.digestVersions = digestVersions
        name = digestVersions ? "json digest" : "json"
    }

    var upstream: String { server.baseURL }

    func section(url: String, directory: TemporaryDirectory) throws -> [String: String] {
        var keys = ["kind": "json", "url": url + "/items", "pagination": "link", "page-size-param": "per_page", "page-size": "100", "push": "yes",
                    "push-create": "POST {url}", "push-update": "PATCH {url}/{id}", "push-delete": "DELETE {url}/{id}", "push-if-match": "yes"]
        if digestVersions {
            keys["version-field"] = "none"
            keys["push-if-match"] = "no"
        }
        return keys
    }

    func body(key: String, value: String) -> String { #"{"key":"\#(key)","name":"\#(value)"}"# }

    func refusedBody(key: String, value: String) -> String? { #"{"key":"\#(key)","name":"\#(value)","invalid":true}"# }

    func replacingValue(in body: String, with value: String) -> String {
        guard var object = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any] else { return body }
        object["name"] = value
        return String(decoding: (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data(), as: UTF8.self)
    }

    func keyAndValue(of body: String) -> (key: String, value: String)? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any],
              let key = object["key"] as? String, let value = object["name"] as? String else { return nil }
        return (key, value)
    }

    private func items() throws -> [[String: Any]] {
        try JSONSerialization.jsonObject(with: Shell.run("/usr/bin/curl", ["-sS", "-f", server.baseURL + "/items?per_page=100000"])) as? [[String: Any]] ?? []
    }

    private func ids(_ key: String) throws -> [Int] {
        try items().filter { $0["key"] as? String == key }.compactMap { $0["id"] as? Int }
    }

    private func curl(_ method: String, _ path: String, _ body: String? = nil) throws {
        var arguments = ["-sS", "-f", "-X", method]
        if let body { arguments += ["-H", "Content-Type: application/json", "--data-binary", body] }
        try Shell.run("/usr/bin/curl", arguments + [server.baseURL + path])
    }

    func otherCreate(key: String, value: String) throws { try curl("POST", "/items", body(key: key, value: value)) }

    func otherUpdate(key: String, value: String) throws -> Bool {
        let ids = try ids(key)
        guard ids.count == 1 else { return false }
        try curl("PATCH", "/items/\(ids[0])", #"{"name":"\#(value)"}"#)
        return true
    }

    func otherDelete(key: String) throws -> Bool {
        let ids = try ids(key)
        guard ids.count == 1 else { return false }
        try curl("DELETE", "/items/\(ids[0])")
        return true
    }

    func records() throws -> [String: [String]] {
        var grouped: [String: [String]] = [:]
        for item in try items() {
            guard let key = item["key"] as? String, let value = item["name"] as? String else { continue }
            grouped[key, default: []].append(value)
        }
        return grouped.mapValues { $0.sorted() }
    }

    func stop() { server.stop() }
}
