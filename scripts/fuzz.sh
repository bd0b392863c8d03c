#!/usr/bin/env bash
# libFuzzer runs over Ferry's parsers.
#
#   bash scripts/fuzz.sh [seconds-per-target] [target...]
#   bash scripts/fuzz.sh --build-only      # the sanitizer build alone (CI makes it early)
#
# Builds Sources/ferry-fuzz with libFuzzer and AddressSanitizer (scratch path .build-fuzz, so
# the normal .build is untouched), then runs each target for the given time (default 30 s):
#
#   json         JSONRecordScanner with the Parse, JSON-collection and Datasette layouts
#   multistatus  MultistatusParser (WebDAV PROPFIND / REPORT answers)
#   card         CardFieldExtractor (vCard and iCalendar fields)
#   config       ConfigurationLoader.parse (ferry.conf)
#
# CI runs 20 s per target (scripts/test.sh). A longer run, e.g. before a release:
#
#   bash scripts/fuzz.sh 600          # 10 minutes per target, about 45 minutes in all
#
# Each target starts from its seed corpus (Tests/Fuzz/corpus/<target>, read only) plus the
# inputs earlier runs found (.build-fuzz/corpus/<target>, kept between runs). Any crash,
# sanitizer report, broken invariant (the target aborts with "ferry-fuzz invariant broken"),
# leak, timeout or out-of-memory fails the script; the input is saved under
# .build-fuzz/artifacts/<target>/ and the replay command is printed. Replay without the
# sanitizer build:  FUZZ_TARGET=<target> swift run ferry-fuzz <file>
#
# Prints per target: inputs executed, execs/s, coverage (libFuzzer's "cov": covered edges;
# "ft": features) and corpus size. Exit status: 0 when every target ran clean.
#
# Why these flags (measured with Swift 6.3.1 on Debian 12):
# - The target is a normal SwiftPM executable: SwiftPM links each executable with `main`
#   aliased to `<target>_main`, so libFuzzer's own `main` cannot be used (link error
#   "undefined symbol 'ferry_fuzz_main'"); -DFERRY_LIBFUZZER swaps the replay `main` for one
#   that calls LLVMFuzzerRunDriver. No -parse-as-library is needed: there is no main.swift.
# - ld.gold prints "Cannot export local symbol '__asan_check_…'" warnings for every ASan link;
#   they come from the toolchain's runtime, not from Ferry, and are filtered from the log.
# - SWIFT_BACKTRACE=enable=no: Swift's backtracer, started on an abort, itself trips ASan
#   ("unknown-crash … memserver_read") and hides the real report.
# - LSAN suppressions (Tests/Fuzz/lsan.supp): a leak in FoundationXML's error callback.
# - multistatus runs with -detect_leaks=0: with leak checking XMLParser's per-document
#   allocations drop it from ~3,000 to ~80 execs/s (the one leak it found is suppressed).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

build_only=0
if [[ ${1:-} == --build-only ]]; then build_only=1; shift; fi
seconds=${1:-30}
shift || true
targets=("$@")
[[ ${#targets[@]} -eq 0 ]] && targets=(json multistatus card config notify)
scratch=.build-fuzz

echo "=== fuzz build (swift build --scratch-path $scratch, -sanitize=fuzzer,address)"
start=$(date +%s)
mkdir -p "$scratch/logs"
swift build --scratch-path "$scratch" --product ferry-fuzz \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFERRY_LIBFUZZER >"$scratch/logs/build.log" 2>&1
built=$?
grep -v "ld.gold: warning: Cannot export local symbol '__asan" "$scratch/logs/build.log"
binary=$scratch/debug/ferry-fuzz
if [[ $built -ne 0 || ! -x "$binary" ]] || ! nm "$binary" 2>/dev/null | grep LLVMFuzzerRunDriver >/dev/null; then
    # (grep without -q: with pipefail, -q closing the pipe early would fail nm with SIGPIPE.)
    echo "FAILED: no libFuzzer build at $binary (exit $built)"
    exit 1
fi
echo "built in $(( $(date +%s) - start )) s: $binary"
[[ $build_only -eq 1 ]] && exit 0

export SWIFT_BACKTRACE=enable=no
export LSAN_OPTIONS="suppressions=$root/Tests/Fuzz/lsan.supp:print_suppressions=0"
failed=()
summary=()
for target in "${targets[@]}"; do
    seeds=Tests/Fuzz/corpus/$target
    work=$scratch/corpus/$target
    artifacts=$scratch/artifacts/$target/
    log=$scratch/logs/$target.log
    mkdir -p "$work" "$artifacts" "$(dirname "$log")"
    [[ -d "$seeds" ]] || { echo "FAILED: no seed corpus $seeds"; failed+=("$target"); continue; }
    extra=()
    [[ "$target" == multistatus ]] && extra+=(-detect_leaks=0)
    echo
    echo "=== fuzz $target: $seconds s (seeds $seeds, corpus $work)"
    FUZZ_TARGET=$target "$binary" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$artifacts" "${extra[@]}" "$work" "$seeds" >"$log" 2>&1
    status=$?
    last=$(grep -E '^#[0-9]+' "$log" | tail -1)
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
    cov=$(sed -nE 's/.* cov: ([0-9]+) ft: ([0-9]+) corp: ([0-9]+)\/.*/cov \1, ft \2, corpus \3/p' <<<"$last")
    line="$target: ${runs:-?} inputs, ${rate:-?} execs/s, ${cov:-no coverage line}"
    if [[ $status -ne 0 ]]; then
        failed+=("$target")
        line="$line: FAILED (exit $status)"
        # What libFuzzer and the target said, and how to replay the saved input.
        grep -E 'invariant broken|ERROR: |SUMMARY: |Test unit written|deadly signal' "$log" | head -20
        crash=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
        [[ -n "$crash" ]] && echo "replay: FUZZ_TARGET=$target $binary $crash   (or: FUZZ_TARGET=$target swift run ferry-fuzz $crash)"
        echo "full log: $log"
    fi
    echo "$line"
    summary+=("$line")
done

echo
echo "=== fuzz summary ($seconds s per target)"
printf '%s\n' "${summary[@]}"
if [[ ${#failed[@]} -gt 0 ]]; then
    echo "FAILED targets: ${failed[*]}"
    exit 1
fi
echo "all ${#targets[@]} targets clean"
