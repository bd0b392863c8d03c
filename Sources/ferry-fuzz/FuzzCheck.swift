import Foundation

/// How a fuzz target reports a broken invariant: print what broke, then abort. libFuzzer treats
/// the abort as a crash and writes the input to `crash-<sha1>`; replaying that file through the
/// plain (non-fuzzer) build prints the same message.
enum FuzzCheck {
    static func expect(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
        if !condition() { fail(message()) }
    }

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("ferry-fuzz invariant broken [\(FuzzTarget.selected.rawValue)]: \(message)\n".utf8))
        abort()
    }
}
