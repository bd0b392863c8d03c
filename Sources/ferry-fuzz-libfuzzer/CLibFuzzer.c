// Intentionally empty: SwiftPM needs one source file in a C target. CLibFuzzer only declares
// libFuzzer's driver (include/CLibFuzzer.h); the definition comes from -sanitize=fuzzer.
