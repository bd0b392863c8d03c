import Foundation
import Testing
@testable import FerryKit

/// ``ParseFieldMerge`` row by row.
@Suite("Parse field merge")
struct ParseFieldMergeTests {
    static func object(_ json: String) -> [String: JSONValue] { JSONValue.object(parsing: json)! }

    @Test func onlyChangedFieldsAreSent_andNumbersAsIncrements() {
        let base = Self.object(#"{"objectId":"a","updatedAt":"t1","text":"x","readCount":3,"score":1.5,"gone":true,"same":[1]}"#)
        let local = Self.object(#"{"objectId":"a","updatedAt":"t1","text":"y","readCount":5,"score":1.0,"same":[1],"new":"n"}"#)
        #expect(ParseFieldMerge.update(base: base, local: local, remote: nil) == .update([
            "text": .string("y"),
            "readCount": .object(["__op": .string("Increment"), "amount": .integer(2)]),
            "score": .object(["__op": .string("Increment"), "amount": .number(-0.5)]),
            "gone": .object(["__op": .string("Delete")]),
            "new": .string("n"),
        ]))
    }

    @Test func aRemoteChangeToOtherFieldsIsKept_andACounterBumpedOnBothSidesAddsUp() {
        let base = Self.object(#"{"text":"x","readCount":3,"author":"a"}"#)
        let local = Self.object(#"{"text":"x","readCount":4,"author":"a"}"#)
        let remote = Self.object(#"{"text":"x","readCount":10,"author":"b"}"#)
        #expect(ParseFieldMerge.update(base: base, local: local, remote: remote) == .update([
            "readCount": .object(["__op": .string("Increment"), "amount": .integer(1)]),
        ]))
    }

    @Test func oneFieldChangedOnBothSidesToDifferentValuesIsAConflict() {
        let base = Self.object(#"{"text":"x","n":1}"#)
        let local = Self.object(#"{"text":"mine","n":1}"#)
        #expect(ParseFieldMerge.update(base: base, local: local, remote: Self.object(#"{"text":"theirs","n":1}"#)) == .conflict(fields: ["text"]))
        // The same new value on both sides is no conflict and nothing to send.
        #expect(ParseFieldMerge.update(base: base, local: local, remote: Self.object(#"{"text":"mine","n":1}"#)) == .update([:]))
        // Removed on both sides: nothing to send.
        #expect(ParseFieldMerge.update(base: base, local: Self.object(#"{"n":1}"#), remote: Self.object(#"{"n":1}"#)) == .update([:]))
    }

    @Test func numbersCompareByValue() {
        #expect(JSONValue.integer(1) == JSONValue.number(1.0))
        #expect(Self.object(#"{"a":{"x":1,"y":[true,null]}}"#) == Self.object(#"{"a":{"y":[true,null],"x":1.0}}"#))
    }

    @Test func aCreateLeavesParsesOwnFieldsOut() {
        #expect(ParseFieldMerge.create(local: Self.object(#"{"objectId":"z","createdAt":"c","updatedAt":"u","text":"t"}"#)) == ["text": .string("t")])
    }
}
