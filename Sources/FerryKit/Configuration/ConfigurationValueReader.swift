import Foundation

/// Reads typed values out of one section's entries, turning every bad value into a problem
/// with file, line and key. Shared by the `[ferry]` and `[store NAME]` readers.
struct ConfigurationValueReader {
    let file: String
    var problems: [ConfigurationProblem] = []

    init(file: String) {
        self.file = file
    }

    mutating func problem(_ entry: ConfigurationSyntax.Entry, _ message: String) {
        problems.append(.init(file: file, line: entry.line, key: entry.key, message: message))
    }

    /// Entries with duplicates removed: each repeated key is a problem naming the first line.
    mutating func unique(_ entries: [ConfigurationSyntax.Entry]) -> [ConfigurationSyntax.Entry] {
        var seen: [String: Int] = [:]
        var result: [ConfigurationSyntax.Entry] = []
        for entry in entries {
            if let first = seen[entry.key] {
                problem(entry, "duplicate key (already set on line \(first))")
                continue
            }
            seen[entry.key] = entry.line
            result.append(entry)
        }
        return result
    }

    mutating func duration(_ entry: ConfigurationSyntax.Entry, allowZero: Bool = false) -> Duration? {
        guard let value = ConfigurationUnits.duration(entry.value) else {
            problem(entry, "expected a duration like 30s, 5m, 2h, 1d or 250ms, got '\(entry.value)'")
            return nil
        }
        guard allowZero || value > .zero else {
            problem(entry, "must be more than 0")
            return nil
        }
        return value
    }

    mutating func seconds(_ entry: ConfigurationSyntax.Entry, allowZero: Bool = false) -> Double? {
        duration(entry, allowZero: allowZero).map { Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18 }
    }

    mutating func size(_ entry: ConfigurationSyntax.Entry, minimum: Int64 = 1) -> Int64? {
        guard let value = ConfigurationUnits.size(entry.value) else {
            problem(entry, "expected a size like 1048576, 512KiB, 256MiB or 1MB, got '\(entry.value)'")
            return nil
        }
        guard value >= minimum else {
            problem(entry, "must be at least \(minimum) bytes")
            return nil
        }
        return value
    }

    mutating func integer(_ entry: ConfigurationSyntax.Entry, in range: ClosedRange<Int>) -> Int? {
        guard let value = Int(entry.value) else {
            problem(entry, "expected a whole number, got '\(entry.value)'")
            return nil
        }
        guard range.contains(value) else {
            problem(entry, "must be between \(range.lowerBound) and \(range.upperBound), got \(value)")
            return nil
        }
        return value
    }

    mutating func choice<T: RawRepresentable>(_ entry: ConfigurationSyntax.Entry, _ type: T.Type, allowed: [T]) -> T?
    where T.RawValue == String {
        guard let value = T(rawValue: entry.value), allowed.contains(where: { $0.rawValue == value.rawValue }) else {
            problem(entry, "expected one of \(allowed.map(\.rawValue).joined(separator: ", ")), got '\(entry.value)'"
                    + Suggestion.hint(for: entry.value, in: allowed.map(\.rawValue)))
            return nil
        }
        return value
    }

    /// An existing path; relative paths resolve against `baseDirectory`.
    mutating func existingFile(_ entry: ConfigurationSyntax.Entry, baseDirectory: String) -> String? {
        let path = Self.absolute(entry.value, against: baseDirectory)
        guard FileManager.default.isReadableFile(atPath: path) else {
            problem(entry, "cannot read \(path)")
            return nil
        }
        return path
    }

    static func absolute(_ path: String, against baseDirectory: String) -> String {
        let joined = path.hasPrefix("/") ? path : (baseDirectory as NSString).appendingPathComponent(path)
        return (joined as NSString).standardizingPath
    }

    /// Applies a transport key shared by `[ferry]` and store sections; false when `entry` is not one.
    mutating func applySessionKey(_ entry: ConfigurationSyntax.Entry, to session: inout SessionConfiguration,
                                  baseDirectory: String) -> Bool {
        switch entry.key {
        case "connect-timeout":
            if let value = seconds(entry) { session.connectTimeout = value }
        case "total-timeout":
            // 0 is libcurl's "no total limit" (the low-speed limit still ends a stalled transfer).
            if let value = seconds(entry, allowZero: true) { session.totalTimeout = value }
        case "low-speed-limit":
            if let value = size(entry) {
                guard value <= Int64(Int32.max) else {
                    problem(entry, "must be at most \(Int32.max) bytes per second")
                    return true
                }
                session.lowSpeedLimit = Int(value)
            }
        case "low-speed-time":
            if let value = duration(entry) {
                guard value >= .seconds(1) else {
                    problem(entry, "must be at least 1s (libcurl counts whole seconds)")
                    return true
                }
                session.lowSpeedTime = Int(value.components.seconds)
            }
        case "max-response-size":
            if let value = size(entry) { session.maxResponseBytes = value }
        case "ca-file":
            if let value = existingFile(entry, baseDirectory: baseDirectory) { session.caFile = value }
        case "read-retries":
            if let value = integer(entry, in: 0...10) { session.readRetries = value }
        default:
            return false
        }
        return true
    }

    static let sessionKeys: Set<String> = [
        "connect-timeout", "total-timeout", "low-speed-limit", "low-speed-time", "max-response-size", "ca-file", "read-retries",
    ]
}
