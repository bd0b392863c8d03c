import Foundation

/// The parsers `ferry-fuzz` can exercise, chosen by `FUZZ_TARGET` (one binary, one sanitizer build).
///
///     FUZZ_TARGET=json .build-fuzz/debug/ferry-fuzz Tests/Fuzz/corpus/json
///
/// Each target's `run` takes one input and checks the parser's invariants; a broken invariant
/// is reported through ``FuzzCheck/fail(_:)``, which aborts so libFuzzer records the input.
enum FuzzTarget: String, CaseIterable, Sendable {
    /// JSONRecordScanner with the layouts the Parse and JSON-collection sources use.
    case json
    /// MultistatusParser (WebDAV PROPFIND / REPORT answers).
    case multistatus
    /// CardFieldExtractor on vCard and iCalendar bodies.
    case card
    /// ConfigurationLoader.parse on a whole configuration file.
    case config
    /// The listener's request path: routing, and every notification scheme's verification.
    case notify

    /// The target named by `FUZZ_TARGET`; an unknown or missing name stops the process with
    /// the list, since fuzzing the wrong parser for ten minutes helps nobody.
    static let selected: FuzzTarget = {
        let name = ProcessInfo.processInfo.environment["FUZZ_TARGET"] ?? ""
        guard let target = FuzzTarget(rawValue: name) else {
            let known = allCases.map(\.rawValue).joined(separator: ", ")
            FileHandle.standardError.write(Data("ferry-fuzz: set FUZZ_TARGET to one of: \(known) (got '\(name)')\n".utf8))
            exit(2)
        }
        return target
    }()

    /// Runs one input through this target's parser and checks its invariants.
    func run(_ data: Data) {
        switch self {
        case .json: JSONPageFuzzer.run(data)
        case .multistatus: MultistatusFuzzer.run(data)
        case .card: CardFieldFuzzer.run(data)
        case .config: ConfigurationFuzzer.run(data)
        case .notify: NotificationFuzzer.run(data)
        }
    }
}
