import Testing
@testable import FerryKit

/// The base a winning local JSON edit is pushed on: the remote's members where the local
/// change edited them, the local body's own elsewhere, so the push carries the edits alone.
@Suite("Rebasing a local JSON edit that won")
struct LocalRebaseTests {
    /// (original base, local body, remote body, new base)
    static let cases: [(String, String, String, String)] = [
        // A stamp the API rewrote and a field another writer changed: the local body carried
        // both unchanged, so they are not sent back.
        (#"{"id":1,"name":"a","rev":0,"updated_at":"t1"}"#, #"{"id":1,"name":"ours","rev":0,"updated_at":"t1"}"#,
         #"{"id":1,"name":"theirs","rev":1,"updated_at":"t2"}"#, #"{"id":1,"name":"theirs","rev":0,"updated_at":"t1"}"#),
        // A member the local edit removed: the remote's value is the base, so the push removes it.
        (#"{"id":1,"note":"x"}"#, #"{"id":1}"#, #"{"id":1,"note":"y"}"#, #"{"id":1,"note":"y"}"#),
        // A member the local edit added and the remote lacks: absent from the base, so it is sent.
        (#"{"id":1}"#, #"{"id":1,"tag":"new"}"#, #"{"id":1,"other":2}"#, #"{"id":1}"#),
        // A member the remote added: the local body lacks it and did not remove it, so the base
        // lacks it too and the push leaves it alone.
        (#"{"id":1,"name":"a"}"#, #"{"id":1,"name":"b"}"#, #"{"id":1,"name":"a","extra":true}"#, #"{"id":1,"name":"a"}"#),
    ]

    @Test(arguments: cases.indices)
    func theBaseHoldsTheRemoteWhereTheLocalChangeEdited(index: Int) throws {
        let (original, local, remote, expected) = Self.cases[index]
        let base = try #require(LocalRebase.base(remote: remote, original: original, local: local))
        #expect(JSONValue.object(parsing: base) == JSONValue.object(parsing: expected))
        // What a merge patch from that base carries: the local edits, nothing carried along.
        let patch = JSONCollectionWriter.mergePatch(from: try #require(JSONValue.object(parsing: base)),
                                                    to: try #require(JSONValue.object(parsing: local)))
        let edits = JSONCollectionWriter.mergePatch(from: try #require(JSONValue.object(parsing: original)),
                                                    to: try #require(JSONValue.object(parsing: local)))
        #expect(Set(patch.keys).isSubset(of: Set(edits.keys)))
    }

    @Test func textBodiesKeepTheRemoteAsTheirBase() {
        #expect(LocalRebase.base(remote: "BEGIN:VCARD\r\nEND:VCARD\r\n", original: "BEGIN:VCARD\r\nEND:VCARD\r\n", local: "x") == nil)
        #expect(LocalRebase.base(remote: "{}", original: nil, local: "{}") == nil)
    }
}
