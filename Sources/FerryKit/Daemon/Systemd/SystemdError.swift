import Foundation

/// A libsystemd call that failed with a negative errno-style return, as a pattern-matchable error.
///
///     catch SystemdError.connectionRefused { ... }
public struct SystemdError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The positive errno (libsystemd returns `-errno`).
    public let code: Int32
    /// The libsystemd function that failed.
    public let function: String

    public init(code: Int32, function: String) {
        self.code = code
        self.function = function
    }

    public var description: String {
        "\(function): \(String(cString: strerror(code)))"
    }

    /// Equal when the errno is: the function is context for people, not identity.
    public static func == (lhs: SystemdError, rhs: SystemdError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// Matches on the errno only, so `catch SystemdError.connectionRefused` works for any function.
    public static func ~= (pattern: SystemdError, value: any Error) -> Bool {
        (value as? SystemdError)?.code == pattern.code
    }

    public static let connectionRefused = SystemdError(code: ECONNREFUSED, function: "")
    public static let noSuchFile = SystemdError(code: ENOENT, function: "")
    public static let permissionDenied = SystemdError(code: EACCES, function: "")
    public static let messageTooLong = SystemdError(code: EMSGSIZE, function: "")
}
