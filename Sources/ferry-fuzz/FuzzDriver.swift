import Foundation

#if FERRY_LIBFUZZER
/// libFuzzer's driver, declared here because no header for it is on the include path.
/// Signature from compiler-rt's FuzzerInterface.h:
/// `int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*UserCb)(const uint8_t *Data, size_t Size));`
/// This is the only C call in the target.
@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt
) -> CInt

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
        var argv = CommandLine.unsafeArgv
        _ = FuzzTarget.selected  // Fail fast on a missing FUZZ_TARGET, before libFuzzer starts.
        let status = LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzz(data, size) }
        exit(status)
    }
}
#endif
