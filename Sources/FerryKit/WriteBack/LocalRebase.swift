import Foundation

/// The base a local JSON change is pushed on after it met a remote change and the local side
/// won (`local-wins`, or a person's `--keep local`).
///
/// A push sends, and a lost answer is later recognised by, what the local body changed against
/// its base. Rebased naively on the remote's body, a local body would seem to change every
/// member it merely carried from the old base: a stamp the API rewrites on every write (with
/// `version-field = none` nothing tells it from a field) would be sent back stale, and after a
/// lost answer the remote, holding our send with a new stamp, would look like another writer's
/// change. So the new base is the remote's body for the members the local change edited
/// (against the body it was made on), and the local body's own value for the others: the
/// push carries exactly the local edits, over whatever else the remote changed meanwhile.
enum LocalRebase {
    /// The base for `local`, an edit of `original`, rebased on `remote`; nil when any of them
    /// is not a JSON object (then the remote's body is the base, as for text bodies).
    static func base(remote: String, original: String?, local: String?) -> String? {
        guard let original, let local,
              let remoteObject = JSONValue.object(parsing: remote),
              let originalObject = JSONValue.object(parsing: original),
              let localObject = JSONValue.object(parsing: local) else { return nil }
        var base: [String: JSONValue] = [:]
        for key in Set(remoteObject.keys).union(originalObject.keys).union(localObject.keys) {
            let edited = localObject[key] != originalObject[key]
            if let value = edited ? remoteObject[key] : localObject[key] { base[key] = value }
        }
        return String(decoding: JSONValue.encode(base), as: UTF8.self)
    }
}
