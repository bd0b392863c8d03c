#ifndef C_LIB_FUZZER_H
#define C_LIB_FUZZER_H

#include <stddef.h>
#include <stdint.h>

// libFuzzer's driver (compiler-rt FuzzerInterface.h), declared here because the toolchain
// installs no header for it. It exists only when linking with -sanitize=fuzzer: ferry-fuzz
// references it only under -DFERRY_LIBFUZZER (scripts/fuzz.sh), so the normal build never
// needs the symbol.
//
// Why ferry-fuzz calls it instead of using libFuzzer's main: SwiftPM links an executable
// target with `main` aliased to `<target>_main`, so the target must define its own entry
// point; this one passes argv on to the driver, exactly as libFuzzer's main does.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
