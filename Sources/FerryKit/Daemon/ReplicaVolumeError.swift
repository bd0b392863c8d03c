import Foundation

/// The replica's directory could not be probed for a reason that says nothing about whether it
/// takes writes (it vanished, the process ran out of descriptors...).
///
///     catch let error as ReplicaVolumeError where error.code == ENOENT { ... }
public struct ReplicaVolumeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The errno of the failed call.
    public let code: Int32
    /// `open`, `write` or `fsync`.
    public let operation: String
    /// The probe file.
    public let path: String

    public var description: String {
        "cannot probe the replica's file system: \(operation) \(path): \(String(cString: strerror(code)))"
    }
}
