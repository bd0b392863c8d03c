import Foundation

/// Seeded random JSON pages for the scanner's comparison and fuzz tests.
public enum JSONDocumentGenerator {
    public static let alphabet: [String] = ["a", "b", "Z", "0", " ", "\\\"", "\\\\", "\\n", "\\u00e9", "\\ud83d\\ude00", "é", "日", "🙂", "/", "\\/", "\\t"]

    public static func string<G: RandomNumberGenerator>(_ rng: inout G, maxLength: Int = 12) -> String {
        let length = Int.random(in: 0...maxLength, using: &rng)
        return "\"" + (0..<length).map { _ in alphabet.randomElement(using: &rng)! }.joined() + "\""
    }

    public static func number<G: RandomNumberGenerator>(_ rng: inout G) -> String {
        switch Int.random(in: 0..<4, using: &rng) {
        case 0: String(Int.random(in: -1000...1000, using: &rng))
        case 1: String(Int.random(in: 0...Int(Int32.max), using: &rng)) + "." + String(Int.random(in: 0...999, using: &rng))
        case 2: "\(Int.random(in: 1...9, using: &rng))e\(Int.random(in: -5...5, using: &rng))"
        default: "-0.\(Int.random(in: 0...99, using: &rng))E+2"
        }
    }

    public static func value<G: RandomNumberGenerator>(_ rng: inout G, depth: Int) -> String {
        let choice = Int.random(in: 0..<(depth > 3 ? 6 : 8), using: &rng)
        switch choice {
        case 0: return string(&rng)
        case 1: return number(&rng)
        case 2: return "true"
        case 3: return "false"
        case 4: return "null"
        case 5: return string(&rng, maxLength: 30)
        case 6:
            let n = Int.random(in: 0...4, using: &rng)
            return "[" + (0..<n).map { _ in value(&rng, depth: depth + 1) }.joined(separator: ",") + "]"
        default:
            let n = Int.random(in: 0...4, using: &rng)
            return "{" + (0..<n).map { _ in string(&rng, maxLength: 6) + ":" + value(&rng, depth: depth + 1) }.joined(separator: ", ") + "}"
        }
    }

    /// A page `{"results":[records...],"next":...}` whose records carry string ids and versions.
    public static func page<G: RandomNumberGenerator>(_ rng: inout G, records: Int) -> (text: String, ids: [String]) {
        var ids: [String] = []
        var parts: [String] = []
        for index in 0..<records {
            let id = "r\(index)-\(UInt32.random(in: 0...UInt32.max, using: &rng))"
            ids.append(id)
            var fields = ["\"id\":\"\(id)\"", "\"updated_at\":\"2024-05-0\(index % 9 + 1)T00:00:00Z\""]
            for _ in 0..<Int.random(in: 0...5, using: &rng) {
                fields.append(string(&rng, maxLength: 8) + ":" + value(&rng, depth: 1))
            }
            fields.shuffle(using: &rng)
            parts.append("{" + fields.joined(separator: ",") + "}")
        }
        let text = "{\"count\":\(records),\"results\":[" + parts.joined(separator: ",\n ") + "],\"next\":null}"
        return (text, ids)
    }
}
