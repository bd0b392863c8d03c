import Foundation

/// Parsing of the value syntaxes a configuration file uses: durations, sizes, shares.
///
/// Durations are one or more `<integer><unit>` terms with unit `ms`, `s`, `m`, `h` or `d`
/// (`30s`, `5m`, `1h30m`, `250ms`), or a bare `0`. A bare number is refused on purpose: a
/// reader cannot tell whether `30` means seconds or milliseconds.
///
/// Sizes are bytes (`1048576`), or a number with `B`, `KB`/`kB`, `MB`, `GB` (powers of 1000) or
/// `K`/`KiB`, `M`/`MiB`, `G`/`GiB` (powers of 1024), as systemd reads them.
public enum ConfigurationUnits {
    /// The duration written as `text`, or nil when it is not a duration.
    public static func duration(_ text: String) -> Duration? {
        let text = text.trimmingCharacters(in: .whitespaces)
        if text == "0" { return .zero }
        var total = Duration.zero
        var rest = Substring(text)
        guard !rest.isEmpty else { return nil }
        while !rest.isEmpty {
            let digits = rest.prefix { $0.isASCII && $0.isNumber }
            guard !digits.isEmpty, let number = Int64(digits) else { return nil }
            rest = rest.dropFirst(digits.count)
            let unit = rest.prefix { $0.isASCII && $0.isLetter }
            guard !unit.isEmpty else { return nil }
            rest = rest.dropFirst(unit.count)
            let (term, overflow): (Int64, Bool)
            switch unit {
            case "ms": (term, overflow) = (number, false)
            case "s": (term, overflow) = number.multipliedReportingOverflow(by: 1_000)
            case "m", "min": (term, overflow) = number.multipliedReportingOverflow(by: 60_000)
            case "h": (term, overflow) = number.multipliedReportingOverflow(by: 3_600_000)
            case "d": (term, overflow) = number.multipliedReportingOverflow(by: 86_400_000)
            default: return nil
            }
            // Cap at ~100 years: larger values are typos, and Duration arithmetic must not overflow.
            guard !overflow, term <= 3_153_600_000_000 else { return nil }
            total += .milliseconds(term)
        }
        return total
    }

    /// The byte count written as `text`, or nil when it is not a size.
    public static func size(_ text: String) -> Int64? {
        let text = text.trimmingCharacters(in: .whitespaces)
        let digits = text.prefix { $0.isASCII && $0.isNumber }
        guard !digits.isEmpty, let number = Int64(digits) else { return nil }
        let unit = text.dropFirst(digits.count).trimmingCharacters(in: .whitespaces)
        let multiplier: Int64
        switch unit {
        case "", "B": multiplier = 1
        case "KB", "kB": multiplier = 1_000
        case "MB": multiplier = 1_000_000
        case "GB": multiplier = 1_000_000_000
        case "K", "KiB": multiplier = 1 << 10
        case "M", "MiB": multiplier = 1 << 20
        case "G", "GiB": multiplier = 1 << 30
        default: return nil
        }
        let (bytes, overflow) = number.multipliedReportingOverflow(by: multiplier)
        return overflow ? nil : bytes
    }

    /// A share written as a percentage (`50%`) or a fraction (`0.5`), in 0...1.
    public static func share(_ text: String) -> Double? {
        let text = text.trimmingCharacters(in: .whitespaces)
        let value: Double?
        if text.hasSuffix("%") {
            value = Double(text.dropLast().trimmingCharacters(in: .whitespaces)).map { $0 / 100 }
        } else {
            value = Double(text)
        }
        guard let value, value.isFinite, (0...1).contains(value) else { return nil }
        return value
    }

    /// How a duration is written back in messages and the annotated default file.
    public static func format(_ duration: Duration) -> String {
        let ms = duration.components.seconds * 1_000 + duration.components.attoseconds / 1_000_000_000_000_000
        if ms == 0 { return "0" }
        for (unit, size) in [("d", Int64(86_400_000)), ("h", 3_600_000), ("m", 60_000), ("s", 1_000)] where ms % size == 0 {
            return "\(ms / size)\(unit)"
        }
        return "\(ms)ms"
    }

    /// How a size is written back in messages: the largest binary unit that divides it.
    public static func formatSize(_ bytes: Int64) -> String {
        for (unit, size) in [("GiB", Int64(1) << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] where bytes >= size && bytes % size == 0 {
            return "\(bytes / size)\(unit)"
        }
        return "\(bytes) bytes"
    }
}

extension Array where Element == String {
    /// "a", "a or b", "a, b or c": for messages that name a few choices.
    func joinedAsList(conjunction: String) -> String {
        guard count > 1 else { return first ?? "" }
        return dropLast().joined(separator: ", ") + " \(conjunction) " + last!
    }
}
