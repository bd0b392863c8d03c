import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

@Suite("Version order")
struct VersionOrderTests {
    static let pairs: [(String, String, Bool)] = [
        ("10", "9", true), ("9", "10", false), ("5", "5", false), ("-1", "-2", true), ("+3", "2", true),
        ("007", "6", true), ("99999999999999999999", "1", true), // overflow: compared as strings
        ("2024-05-01T10:00:00.000Z", "2024-04-30T23:59:59.000Z", true), ("abc", "abd", false), ("ab", "a", true), ("", "a", false),
        ("1", "", true), ("é", "e", true), ("12a", "12", true),
    ]

    @Test func swiftAndSQLAgreeWithInt64Parsing() throws {
        let directory = try TemporaryDirectory()
        let replica = try ReplicaDatabase(path: directory.path("replica.db"))
        let statement = try replica.connection.prepare("SELECT ferry_version_newer(?1, ?2)")
        for (incoming, stored, newer) in Self.pairs {
            #expect(VersionOrder.isNewer(incoming, than: stored) == newer, "\(incoming) vs \(stored)")
            // Same answer as the definition: Int64 parsing, else byte order.
            let reference = (Int64(incoming).flatMap { a in Int64(stored).map { a > $0 } }) ?? stored.utf8.lexicographicallyPrecedes(incoming.utf8)
            #expect(reference == newer, "\(incoming) vs \(stored)")
            try statement.bind(incoming, at: 1)
            try statement.bind(stored, at: 2)
            #expect(try statement.step())
            #expect((statement.int64(at: 0) == 1) == newer, "SQL: \(incoming) vs \(stored)")
            statement.reset()
        }
    }
}
