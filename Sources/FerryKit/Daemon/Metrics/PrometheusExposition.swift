import Foundation

/// Prometheus's text exposition format (version 0.0.4), written by hand: a few families of
/// counters, gauges and histograms need no client library, and the format is small and
/// stable. Each family is written whole (`# HELP`, `# TYPE`, then its samples), as scrapers
/// and `promtool check metrics` require.
struct PrometheusExposition {
    enum Kind: String {
        case counter, gauge, histogram
    }

    /// The content type scrapers expect for this format.
    static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    private(set) var text = ""

    /// One family: its samples come from `samples`, which calls the writer it is given.
    mutating func family(_ name: String, _ kind: Kind, help: String, samples: (inout Samples) -> Void) {
        var writer = Samples(name: name)
        samples(&writer)
        // A family without samples is left out: `# TYPE` alone says nothing a scraper can use.
        guard !writer.lines.isEmpty else { return }
        text += "# HELP \(name) \(Self.escapeHelp(help))\n# TYPE \(name) \(kind.rawValue)\n"
        text += writer.lines
    }

    /// The samples of one family.
    struct Samples {
        let name: String
        fileprivate(set) var lines = ""

        /// A counter or gauge sample.
        mutating func add(_ labels: [(String, String)] = [], _ value: Double) {
            line(name, labels, value)
        }

        /// A histogram's samples: each bucket's cumulative count with its `le`, then `+Inf`,
        /// `_sum` and `_count`.
        mutating func histogram(_ labels: [(String, String)], _ histogram: Histogram) {
            var cumulative: UInt64 = 0
            for (bound, count) in zip(histogram.bounds, histogram.counts) {
                cumulative += count
                line(name + "_bucket", labels + [("le", PrometheusExposition.number(bound))], Double(cumulative))
            }
            line(name + "_bucket", labels + [("le", "+Inf")], Double(histogram.count))
            line(name + "_sum", labels, histogram.sum)
            line(name + "_count", labels, Double(histogram.count))
        }

        private mutating func line(_ metric: String, _ labels: [(String, String)], _ value: Double) {
            lines += metric
            if !labels.isEmpty {
                lines += "{" + labels.map { "\($0.0)=\"\(PrometheusExposition.escapeLabel($0.1))\"" }.joined(separator: ",") + "}"
            }
            lines += " " + PrometheusExposition.number(value) + "\n"
        }
    }

    /// Observations sorted into fixed upper bounds (`le`), with their count and sum.
    struct Histogram: Sendable, Equatable {
        let bounds: [Double]
        /// Observations per bucket (not cumulative): at or below its bound, above the last.
        private(set) var counts: [UInt64]
        private(set) var count: UInt64 = 0
        private(set) var sum: Double = 0

        init(bounds: [Double]) {
            precondition(bounds == bounds.sorted() && Set(bounds).count == bounds.count, "histogram bounds must increase")
            self.bounds = bounds
            counts = Array(repeating: 0, count: bounds.count)
        }

        mutating func observe(_ value: Double) {
            if let index = bounds.firstIndex(where: { value <= $0 }) { counts[index] += 1 }
            count += 1
            sum += value
        }
    }

    /// A sample value as the format writes it: integers without a fraction, `+Inf`, `NaN`.
    static func number(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }

    /// A label value: backslash, double quote and line feed escaped.
    static func escapeLabel(_ value: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(value.utf8.count)
        for character in value.unicodeScalars {
            switch character {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.unicodeScalars.append(character)
            }
        }
        return escaped
    }

    /// A help text: backslash and line feed escaped.
    static func escapeHelp(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\n", with: "\\n")
    }
}
