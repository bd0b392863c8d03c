import Foundation

/// How a Parse object's local change becomes a `PUT` that keeps concurrent writers safe: only
/// the fields changed locally are sent, a number changed by a delta is sent as `Increment`
/// (so a counter bumped here and on the remote ends with both bumps, the seed's read count), a
/// removed field as `Delete`. When the remote changed since the base, the merge is three-way,
/// field by field:
///
/// | field changed locally | on the remote since the base      | sent                     |
/// |-----------------------|-----------------------------------|--------------------------|
/// | no                    | (anything)                        | nothing (theirs stays)   |
/// | yes, a number by Δ    | (anything, even the same Δ)       | `Increment` Δ            |
/// | yes                   | no                                | the local value          |
/// | yes                   | yes, to the same value            | nothing                  |
/// | yes                   | yes, to another value             | a conflict               |
///
/// Parse's own fields (`objectId`, `createdAt`, `updatedAt`, and `ACL` unless changed) are never
/// sent as data.
enum ParseFieldMerge {
    enum Outcome: Equatable {
        /// The body of the `PUT` (a JSON object, possibly empty: nothing to send).
        case update([String: JSONValue])
        /// Fields changed on both sides to different values.
        case conflict(fields: [String])
    }

    static let builtIn: Set<String> = ["objectId", "createdAt", "updatedAt"]

    static func update(base: [String: JSONValue], local: [String: JSONValue], remote: [String: JSONValue]?) -> Outcome {
        var body: [String: JSONValue] = [:]
        var conflicting: [String] = []
        let keys = Set(base.keys).union(local.keys).subtracting(builtIn)
        for key in keys.sorted() {
            let before = base[key]
            let after = local[key]
            guard before != after else { continue }
            // A number changed by a delta is an increment whatever the remote did: the remote
            // moving by the same amount is another writer's bump, not this one (a send that may
            // have applied already is the writer's to detect, by the version it was sent on).
            if let from = before?.numeric, let to = after?.numeric, case let delta = to - from {
                if case .integer(let a)? = before, case .integer(let b)? = after {
                    body[key] = .object(["__op": .string("Increment"), "amount": .integer(b - a)])
                } else {
                    body[key] = .object(["__op": .string("Increment"), "amount": .number(delta)])
                }
                continue
            }
            if let remote, remote[key] == after { continue }
            if let remote, remote[key] != before {
                conflicting.append(key)
                continue
            }
            body[key] = after ?? .object(["__op": .string("Delete")])
        }
        return conflicting.isEmpty ? .update(body) : .conflict(fields: conflicting)
    }

    /// A create's body: the local object without Parse's own fields.
    static func create(local: [String: JSONValue]) -> [String: JSONValue] {
        local.filter { !builtIn.contains($0.key) }
    }
}
