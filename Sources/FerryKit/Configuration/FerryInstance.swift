import Foundation

/// One of several ferryd instances on a host, run by the template unit `ferryd@NAME.service`
/// (tenants or credentials kept apart): its configuration is `/etc/ferry/NAME.conf`, its
/// state `/var/lib/ferry/NAME/` and its runtime directory `/run/ferry-NAME/`, as the unit's
/// `StateDirectory=ferry/%i` and `RuntimeDirectory=ferry-%i` make them (not `ferry/%i`:
/// systemd removes `/run/ferry` whole when `ferryd.service` stops, which would take every
/// instance's files with it).
///
/// `ferry --instance NAME ...` (or `FERRY_INSTANCE=NAME`) reaches an instance: the same paths
/// the unit gives ferryd, so every subcommand finds that instance's files without being told
/// each of them.
public struct FerryInstance: Sendable, Equatable, CustomStringConvertible {
    public let name: String

    /// `name` as systemd's `%i` would carry it: letters, digits, `-`, `_` and `.`, not
    /// starting with a dot, at most 64 characters (a path component and a unit name).
    public init(_ name: String) throws(InstanceNameError) {
        let allowed = name.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "-_.".unicodeScalars.contains($0)) }
        guard !name.isEmpty, name.count <= 64, allowed, !name.hasPrefix(".") else { throw InstanceNameError(name: name) }
        self.name = name
    }

    /// The instance named by `FERRY_INSTANCE`, if set.
    public static func fromEnvironment(_ environment: [String: String]) throws(InstanceNameError) -> FerryInstance? {
        guard let name = environment["FERRY_INSTANCE"], !name.isEmpty else { return nil }
        return try FerryInstance(name)
    }

    public var configurationPath: String { "/etc/ferry/\(name).conf" }
    public var stateDirectory: String { "/var/lib/ferry/\(name)" }
    /// Beside `/run/ferry`, not under it: `ferryd.service` owns that directory, and systemd
    /// removes it whole when the main unit stops.
    public var runtimeDirectory: String { "/run/ferry-\(name)" }
    public var unit: String { "ferryd@\(name).service" }
    public var description: String { unit }

    /// `environment` as the instance's unit would set it for ferryd: its state and runtime
    /// directories (so the database and the pid file default to the instance's), and its
    /// configuration file unless `FERRY_CONFIG` names one.
    public func environment(_ environment: [String: String]) -> [String: String] {
        var adjusted = environment
        adjusted["STATE_DIRECTORY"] = stateDirectory
        adjusted["RUNTIME_DIRECTORY"] = runtimeDirectory
        if adjusted["FERRY_CONFIG"]?.isEmpty ?? true { adjusted["FERRY_CONFIG"] = configurationPath }
        return adjusted
    }
}

/// A name that cannot be an instance's (a usage error: exit 64).
public struct InstanceNameError: Error, Sendable, Equatable, CustomStringConvertible {
    public let name: String

    public var description: String {
        "\"\(name)\" is not an instance name: use letters, digits, '-', '_' and '.' (at most 64, not starting with '.'), as in ferryd@NAME.service"
    }
}
