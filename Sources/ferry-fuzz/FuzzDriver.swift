import Foundation

#if FERRY_LIBFUZZER
import CLibFuzzer

/// The fuzzing build's `main`.
///
/// Why not libFuzzer's own `main`: SwiftPM links every executable target with its entry point
/// renamed (`-entry-point-function-name ferry_fuzz_main`) and `main` aliased to that symbol, so
/// a target without a Swift `main` fails to link ("undefined symbol 'ferry_fuzz_main'"). This
/// `main` hands the command line to libFuzzer's driver instead, which behaves exactly like
/// libFuzzer's `main` (same flags, corpus directories, crash artifacts).
@main
enum FuzzDriver {
    static func main() {
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        _ = FuzzTarget.selected  // Fail fast on a missing FUZZ_TARGET, before libFuzzer starts.
        // libFuzzer's status is the process's: 0 when the run ended clean, non-zero after a crash
        // (which it has already reported and saved). Nothing to turn into a Swift error.
        let status = LLVMFuzzerRunDriver(&argc, &argv) { data, size in
            // libFuzzer passes a real buffer even for an empty input; an empty one is fine too.
            guard let data else {
                FuzzTarget.selected.run(Data())
                return 0
            }
            return fuzz(data, size)
        }
        exit(status)
    }
}
#endif
