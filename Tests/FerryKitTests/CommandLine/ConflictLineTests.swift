import Foundation
import Testing
@testable import FerryKit

/// `ferry conflicts --json`: every key of the documented shape in every line, `null` when it
/// has no value (a held conflict over a record deleted on the remote has five).
@Suite("ferry conflicts --json")
struct ConflictLineTests {
    @Test func everyKeyIsPresent_nullWhenItHasNoValue() throws {
        let held = ReplicaDatabase.Conflict(conflictID: 7, store: "contacts", id: "card-1.vcf", detected: Date(timeIntervalSince1970: 0),
                                            localOperation: .delete, localBody: nil, remoteVersion: nil, remoteBody: nil, policy: "hold",
                                            resolution: nil, resolved: nil)
        let data = try StoreStatus.makeEncoder().encode(ConflictLine(held))
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let documented = ["conflict_id", "store", "id", "detected", "local_operation", "local_body", "remote_version", "remote_body",
                          "policy", "resolution", "resolved"]
        #expect(object.keys.sorted() == documented.sorted())
        for key in ["local_body", "remote_version", "remote_body", "resolution", "resolved"] {
            #expect(object[key] is NSNull, "\(key) is null")
        }
        #expect(object["local_operation"] as? String == "delete")
    }
}
