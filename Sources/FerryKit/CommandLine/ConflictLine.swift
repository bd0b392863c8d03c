import Foundation

/// One conflict as a JSON line (a stable contract, like `ferry changes`): conflict_id, store,
/// id, detected, local_operation, local_body, remote_version, remote_body (null: deleted on the
/// remote), policy, resolution (null while held), resolved. Every key is always there, `null`
/// when it has no value, so a reader never tells "absent" from "null".
public struct ConflictLine: Encodable {
    /// The command that resolves held conflict `id`, as `ferry conflicts` prints it beside it.
    public static func resolveCommand(_ id: Int64) -> String {
        "ferry conflicts resolve \(id) --keep local|remote|both"
    }

    var conflictID: Int64
    var store: String
    var id: String
    var detected: Date
    var localOperation: String
    var localBody: String?
    var remoteVersion: String?
    var remoteBody: String?
    var policy: String
    var resolution: String?
    var resolved: Date?

    // snake_case, as `ferry status --json` and `ferry changes` write theirs.
    enum CodingKeys: String, CodingKey {
        case store, id, detected, policy, resolution, resolved
        case conflictID = "conflict_id"
        case localOperation = "local_operation"
        case localBody = "local_body"
        case remoteVersion = "remote_version"
        case remoteBody = "remote_body"
    }

    public init(_ conflict: ReplicaDatabase.Conflict) {
        conflictID = conflict.conflictID
        store = conflict.store
        id = conflict.id
        detected = conflict.detected
        localOperation = conflict.localOperation.description
        localBody = conflict.localBody
        remoteVersion = conflict.remoteVersion
        remoteBody = conflict.remoteBody
        policy = conflict.policy
        resolution = conflict.resolution
        resolved = conflict.resolved
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(conflictID, forKey: .conflictID)
        try container.encode(store, forKey: .store)
        try container.encode(id, forKey: .id)
        try container.encode(detected, forKey: .detected)
        try container.encode(localOperation, forKey: .localOperation)
        try container.encode(localBody, forKey: .localBody)
        try container.encode(remoteVersion, forKey: .remoteVersion)
        try container.encode(remoteBody, forKey: .remoteBody)
        try container.encode(policy, forKey: .policy)
        try container.encode(resolution, forKey: .resolution)
        try container.encode(resolved, forKey: .resolved)
    }
}
