/// The directory that should hold the replica cannot be created.
public struct DatabaseLocationError: Error, Sendable, CustomStringConvertible {
    public var directory: String
    public var reason: String

    public var description: String {
        "cannot create the database directory \(directory): \(reason) (set `database =` in the [ferry] section, or create it)"
    }
}
