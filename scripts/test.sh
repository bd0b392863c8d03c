#!/usr/bin/env bash
# Ferry's whole test run (the README's test command; .ci/run execs it).
#
#   bash scripts/test.sh
#
# Phases: dependencies (apt packages, the build's first, then the test servers' and pip
# packages in a venv beside the build), build, swift test in eleven processes
# (scripts/swift-test-shards.sh; the two-way model and the push contract on every server three
# each, the push contract's every-policy test one), the two crash loops side by side
# (Tests/Reliability/crash_loop.py, push_crash_loop.py) with the systemd system test
# (Tests/System/systemd-test.sh) and apt-deps.sh under a real systemd
# (Tests/System/apt-deps-systemd-test.sh) beside them, the daemon suite
# (Tests/Reliability/daemon_suite.py), a stock Prometheus scraping ferryd
# (Tests/System/prometheus_scrape.py), the shipped alert rules and dashboard against it
# (contrib/check.sh), apt-deps.sh against stubs, the unit files' offline checks
# (systemd/check-unit.sh), and a short libFuzzer run over the parsers (scripts/fuzz.sh) beside
# the Debian package's test (Tests/System/package-test.sh). The fuzzers' sanitizer build and
# the package's release builds run in the background from the end of the build on, niced,
# beside the tests. Tests that mostly wait (on a booting systemd, apt, a fuzzer's clock) run
# beside ones that need the CPU; the daemon suite, which measures CPU, runs alone. A missing
# dependency of the crash loops, Prometheus, the systemd tests or the package is a skip on a
# developer's machine and a failure under CI=true.
# Exits non-zero when any phase failed; the last lines are each phase's wall and CPU time and
# "N passed, N failed" over the phases. Each long phase has its own time cap, and no cap reaches
# past 40 minutes after the start, so a hang cannot stall CI past 41 minutes; a run on a quiet
# two-core machine takes under 30.
#
# Environment: FERRY_VENV (default ~/.cache/ferry/venv) holds radicale, xandikos, datasette and
# vdirsyncer; SDBOX (default ../shared/tools/sdbox/sdbox beside the checkout); CI=true.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
source scripts/apt-deps.sh

passed=0
failed=0
skipped=()
# Every phase's wall time, printed as it ends and again in a table at the end, so a slow phase
# shows in CI's log without timestamps.
# The CPU time of the phase's processes (user + system, from bash's `times`) is printed beside
# it: on a shared machine the wall time says how loaded it was, the CPU time what the phase costs.
timings=()
phase_name=""
phase_started=$(date +%s)
phase_cpu=0
cpu_file=$(mktemp)
cpu_now=0
read_cpu() {  # cpu_now: seconds of CPU used by finished child processes so far
    # `times` in this shell: a pipe or $( ) would ask a fresh subshell, which has no children.
    times > "$cpu_file"
    cpu_now=$(awk 'NR == 2 { t = 0; for (i = 1; i <= 2; i++) { split($i, p, "m"); t += p[1] * 60 + p[2] } printf "%d", t }' "$cpu_file")
}
phase() {
    end_phase
    phase_name="$*"
    phase_started=$(date +%s)
    read_cpu
    phase_cpu=$cpu_now
    echo; echo "=== $*"
}
end_phase() {
    [[ -n "$phase_name" ]] || return 0
    read_cpu
    local took=$(( $(date +%s) - phase_started )) cpu=$(( cpu_now - phase_cpu ))
    timings+=("$(printf '%5d s wall %6d s CPU  %s' "$took" "$cpu" "$phase_name")")
    echo "(${took} s wall, ${cpu} s CPU)"
    phase_name=""
}
ok() { passed=$((passed + 1)); echo "--- passed: $1"; }
bad() { failed=$((failed + 1)); echo "--- FAILED: $1"; }
# Why a failed phase failed, printed again at the end: a long run's log is often read only
# by its head and tail.
reasons=$(mktemp)
logs=$(mktemp -d)
remember() { # NAME LOG: the lines of LOG that say why a test failed
    { echo "--- $1:"; grep -a -E '✘|Expectation failed|FERRY_TWO_WAY_SEED|error:|FAIL' "$2" | grep -a -v -E '✘ Test run|^--- ' | head -40; } >>"$reasons"
}
finish() {
    end_phase
    echo
    echo "=== time per phase ($(( $(date +%s) - started )) s in all):"
    printf '%s\n' "${timings[@]}"
    echo
    if [[ -s "$reasons" ]]; then echo "=== why:"; cat "$reasons"; echo; fi
    [[ ${#skipped[@]} -gt 0 ]] && printf 'skipped: %s\n' "${skipped[@]}"
    echo "$passed passed, $failed failed"
    [[ $failed -eq 0 ]]
    exit $?
}
is_ci() { [[ "${CI:-}" == "true" ]]; }
# cap N: N minutes, or what is left before 40 minutes after the start if that is less (seconds,
# for `timeout`). Phases that no longer have a minute fail as timed out instead of running.
started=$(date +%s)
cap() {
    local left=$(( started + 40 * 60 - $(date +%s) ))
    local want=$(( $1 * 60 ))
    (( left < 60 )) && left=1
    echo "$(( want < left ? want : left ))s"
}

# What the build needs is installed first; the build then runs in the background while the
# test servers install (apt, pip), which mostly wait on the network and dpkg: on a fresh
# machine that overlap is a minute and a half.
phase "dependencies: apt, what the build needs"
build_packages=(libcurl4-openssl-dev libsqlite3-dev libssl-dev libsystemd-dev libical-dev pkg-config git)
if ensure_apt_packages "${build_packages[@]}"; then
    ok "apt dependencies of the build"
else
    bad "apt dependencies of the build"
fi
timeout "$(cap 18)" swift build --build-tests >"$logs/build.log" 2>&1 &
building=$!

phase "dependencies: apt, the test servers (beside the build)"
if ensure_apt_packages systemd-container sqlite3 python3-venv curl openssl nginx-light prometheus \
        davical postgresql-15 php-sabre-dav php-sqlite3 sogo memcached \
        debhelper lintian fakeroot; then
    ok "apt dependencies of the tests"
else
    bad "apt dependencies of the tests"
fi

phase "dependencies: pip (radicale xandikos datasette vdirsyncer; beside the build)"
export FERRY_VENV=${FERRY_VENV:-$HOME/.cache/ferry/venv}
venv_ok=1
if [[ ! -x "$FERRY_VENV/bin/python3" ]]; then
    python3 -m venv "$FERRY_VENV" || venv_ok=0
fi
if [[ $venv_ok -eq 1 ]]; then
    need=0
    for tool in radicale xandikos datasette vdirsyncer; do
        [[ -x "$FERRY_VENV/bin/$tool" ]] || need=1
    done
    if [[ $need -eq 1 ]]; then
        "$FERRY_VENV/bin/python3" -m pip install -q --disable-pip-version-check \
            radicale xandikos datasette vdirsyncer || venv_ok=0
    fi
fi
export PATH="$FERRY_VENV/bin:$PATH"
if [[ $venv_ok -eq 1 ]] && command -v radicale xandikos datasette >/dev/null; then
    ok "pip dependencies in $FERRY_VENV"
else
    bad "pip dependencies in $FERRY_VENV"
fi

phase "build: swift build --build-tests (the rest of it, after the installs)"
wait $building; build_status=$?
cat "$logs/build.log"
if [[ $build_status -eq 0 ]]; then
    ok "build"
else
    bad "build"
    finish
fi

# Whether the container phases (system test, package) can run here: asked now, because the
# package's build starts now.
SDBOX=${SDBOX:-$root/../shared/tools/sdbox/sdbox}
export SDBOX
reason=""
if [[ $(id -u) -ne 0 ]]; then
    reason="needs root (sdbox boots systemd in a container)"
elif [[ ! -x "$SDBOX" ]]; then
    reason="sdbox not found at $SDBOX (set SDBOX=)"
elif ! "$SDBOX" selftest >"$logs/sdbox-selftest.log" 2>&1; then
    reason="sdbox selftest failed here ($(tail -1 "$logs/sdbox-selftest.log"))"
fi
package_reason=$reason
if [[ -z "$package_reason" ]] && { ! command -v dpkg-buildpackage >/dev/null || ! command -v dh >/dev/null; }; then
    package_reason="debhelper not installed"
fi

# The fuzzers' sanitizer build and the package's two static release builds need no test
# server, and nothing waits for them until the end: they run now, beside the tests, niced and
# one after the other, on the CPU the tests leave while they wait on servers. The fuzz and
# package phases below wait for them (BUILD.rc appears when one ends).
pkgwork=$(mktemp -d)
(
    nice -n 10 bash scripts/fuzz.sh --build-only >"$logs/fuzz-build.log" 2>&1
    echo $? >"$logs/fuzz-build.rc"
    if [[ -z "$package_reason" ]]; then
        # From a copy of the tree, so the .deb lands in a temporary directory, not beside the
        # checkout.
        mkdir -p "$pkgwork/ferry"
        (cd "$root" && git ls-files -z | xargs -0 cp --parents -t "$pkgwork/ferry/") &&
            (cd "$pkgwork/ferry" && nice -n 10 dpkg-buildpackage -us -uc -b >"$pkgwork/build.log" 2>&1)
        echo $? >"$pkgwork/build.rc"
    fi
) &
background_builds=$!
wait_for_build() {  # RC-FILE CAP (as cap prints it): waits for a background build's end; its exit status
    local deadline=$(( $(date +%s) + ${2%s} ))
    while [[ ! -s "$1" ]] && (( $(date +%s) < deadline )); do sleep 2; done
    [[ -s "$1" ]] && return "$(cat "$1")"
    echo "timed out waiting for the build ($2)"
    return 124
}

phase "swift test: every suite, in 11 processes (scripts/swift-test-shards.sh)"
# Four processes share the unit and integration suites; the two-way model and the push
# contract, the longest, have three each (their test functions dealt out between them), and
# the push contract's every-policy test, with four times the cases of each other, one alone.
# The two-way model replays its seed corpus (Tests/TwoWay/seeds.txt: every seed that ever
# failed, and a fixed seed for every server and policy) for its fixed rounds of local and
# remote writes with lost answers, killed pushes and two pushers, checked against
# TwoWayModel's allowed end states after each round, on the Parse and JSON test servers,
# Radicale, Xandikos, DAViCal and sabre/dav; the push contract runs its
# fixed sequences for every kind that pushes. Deterministic: fresh seeds are explored by
# scripts/explore-two-way.sh MINUTES, not here.
if timeout "$(cap 16)" bash scripts/swift-test-shards.sh "${FERRY_TEST_SHARDS:-4}" "$logs/shards" '^$' \
        'TwoWayModelTests|PushContractTests' 'everyPolicyDecidesEveryConflict' >"$logs/swift-test.log" 2>&1; then
    sed -n '/^--- shards:/,$p' "$logs/swift-test.log"
    ok "swift test"
else
    cat "$logs/swift-test.log"
    bad "swift test"
    remember "swift test" "$logs/swift-test.log"
fi

phase "reliability: the crash loops, with the systemd tests beside them (crash_loop.py, push_crash_loop.py, systemd-test.sh, apt-deps-systemd-test.sh)"
# crash_loop.py: 50 SIGKILLs of `ferry sync` against 100,000 Parse objects and 2,000 Xandikos
# cards that change during the runs, then an exact comparison of the replica with both servers
# (≈2-3 minutes); --sabotage proves the comparison reports a damaged replica (≈10 s).
# push_crash_loop.py: 50 SIGKILLs of ferryd while programs write its push tables (Parse and
# CardDAV) and both servers change; then nothing local lost or sent twice, only real conflicts
# held, replica == servers (≈2.5 minutes). Their servers and replicas are their own, and what
# they check does not depend on timing, so they run side by side; each log is printed whole.
# Their seeds are fixed (what they write and in what order; the kill moments still follow the
# servers' timing): run either without --seed, as often as you like, to explore.
# Beside them, in boxes of their own, the two tests that mostly wait on a booting systemd and
# on apt (10 s of CPU in two minutes): the system test (Tests/System/systemd-test.sh) and
# apt-deps.sh under a real systemd with a real package (Tests/System/apt-deps-systemd-test.sh:
# an install by ensure_apt_packages starts and enables nothing, and leaves the admin's units
# and policy-rc.d alone; it needs Debian's mirrors).
systemd_tests=()
if [[ -z "$reason" ]]; then
    FERRYD="$root/.build/debug/ferryd" FERRY="$root/.build/debug/ferry" \
        timeout "$(cap 6)" bash Tests/System/systemd-test.sh >"$logs/system-test.log" 2>&1 &
    systemd_tests+=($!)
    SDBOX_NAME=ferry-aptdeps timeout "$(cap 4)" bash Tests/System/apt-deps-systemd-test.sh >"$logs/apt-deps-systemd.log" 2>&1 &
    systemd_tests+=($!)
fi
if [[ ! -x "$FERRY_VENV/bin/xandikos" ]] && ! is_ci && ! command -v xandikos >/dev/null; then
    echo "skipping: xandikos not installed in $FERRY_VENV"
    skipped+=("crash loops: xandikos not installed")
else
    FERRY="$root/.build/debug/ferry" timeout "$(cap 5)" bash -c '
        python3 Tests/Reliability/crash_loop.py --kills 50 --records 100000 --cards 2000 --page-size 200 --budget 170 --seed 1207 &&
        echo "--- the checker itself: a small loop, then a damaged replica must be reported" &&
        python3 Tests/Reliability/crash_loop.py --sabotage --kills 4 --records 3000 --cards 50 &&
        echo "--- late Parse writes (stamped before the stored cursor) reach the replica" &&
        python3 Tests/Reliability/parse_late_write_repro.py' >"$logs/crash-loop.log" 2>&1 &
    crash=$!
    FERRY="$root/.build/debug/ferry" FERRYD="$root/.build/debug/ferryd" timeout "$(cap 5)" \
        python3 Tests/Reliability/push_crash_loop.py --kills 50 --records 3000 --cards 300 --budget 150 --seed 1874802417 \
        >"$logs/push-crash-loop.log" 2>&1 &
    push_crash=$!
    wait $crash; crash_status=$?
    wait $push_crash; push_crash_status=$?
    echo "--- crash_loop.py (exit $crash_status)"; cat "$logs/crash-loop.log"
    echo "--- push_crash_loop.py (exit $push_crash_status)"; cat "$logs/push-crash-loop.log"
    if [[ $crash_status -eq 0 ]]; then ok "crash loop"; else bad "crash loop"; fi
    if [[ $push_crash_status -eq 0 ]]; then ok "two-way crash loop"; else bad "two-way crash loop"; fi
fi

if [[ -n "$reason" ]]; then
    for what in "system test" "apt-deps.sh under systemd"; do
        if is_ci; then bad "$what: $reason"; else echo "skipping $what: $reason"; skipped+=("$what: $reason"); fi
    done
else
    wait "${systemd_tests[0]}"; system_status=$?
    wait "${systemd_tests[1]}"; aptdeps_status=$?
    echo "--- Tests/System/systemd-test.sh (exit $system_status)"; cat "$logs/system-test.log"
    if [[ $system_status -eq 0 ]]; then ok "system test"; else bad "system test"; remember "system test" "$logs/system-test.log"; fi
    echo "--- Tests/System/apt-deps-systemd-test.sh (exit $aptdeps_status)"; cat "$logs/apt-deps-systemd.log"
    case $aptdeps_status in
        0) ok "apt-deps.sh under systemd" ;;
        2) if is_ci; then bad "apt-deps.sh under systemd: Debian's mirrors out of reach"
           else skipped+=("apt-deps.sh under systemd: Debian's mirrors out of reach"); fi ;;
        *) bad "apt-deps.sh under systemd"; remember "apt-deps.sh under systemd" "$logs/apt-deps-systemd.log" ;;
    esac
fi

phase "reliability through ferryd: Tests/Reliability/daemon_suite.py"
# Many stores in one ferryd (a 100-store baseline, then 1,000 stores at interval 20 s measured
# for 60 s, then idle; `--stores 5000 --interval 60 --duration 3600` with the release build is
# the documented long run), ten injected faults with backoff timing, full disk and read-only
# replica (needs root: a skip on a developer's machine, a failure under CI=true). About 6
# minutes; capped at 9.
if FERRY_BIN_DIR="$root/.build/debug" timeout "$(cap 9)" python3 Tests/Reliability/daemon_suite.py \
        --stores 1000 --interval 20 --duration 60; then
    ok "daemon reliability suite"
else
    bad "daemon reliability suite"
fi

phase "metrics: a stock Prometheus scrapes ferryd (Tests/System/prometheus_scrape.py)"
# promtool check metrics on ferryd's exposition, then Debian's prometheus scraping it every
# second until its query API holds the store's figures (≈10 s).
timeout "$(cap 2)" python3 Tests/System/prometheus_scrape.py
case $? in
    0) ok "Prometheus scrape" ;;
    2) if is_ci; then bad "Prometheus scrape: prometheus missing"; else skipped+=("Prometheus scrape: prometheus not installed"); fi ;;
    *) bad "Prometheus scrape" ;;
esac

phase "metrics: alert rules and dashboard (contrib/check.sh)"
# promtool check rules and promtool test rules on contrib/prometheus, then every PromQL
# expression of the rules and of the Grafana dashboard against Debian's prometheus scraping
# ferryd every second, with the rules loaded (≈10 s).
FERRYD="$root/.build/debug/ferryd" timeout "$(cap 2)" bash contrib/check.sh
case $? in
    0) ok "alert rules and dashboard" ;;
    2) if is_ci; then bad "alert rules and dashboard: prometheus missing"; else skipped+=("alert rules and dashboard: prometheus not installed"); fi ;;
    *) bad "alert rules and dashboard" ;;
esac

phase "installing test servers leaves services alone (Tests/System/apt-deps-test.sh)"
if bash Tests/System/apt-deps-test.sh; then
    ok "apt-deps.sh"
else
    bad "apt-deps.sh"
fi

phase "unit files: systemd/check-unit.sh (verify without warnings, exposure <= 1.5)"
if FERRYD="$root/.build/debug/ferryd" FERRY="$root/.build/debug/ferry" bash systemd/check-unit.sh &&
        FERRYD="$root/.build/debug/ferryd" FERRY="$root/.build/debug/ferry" bash systemd/check-unit.sh systemd/ferryd@.service; then
    ok "unit files"
else
    bad "unit files"
fi

phase "fuzz and package side by side: scripts/fuzz.sh 15; dpkg-buildpackage, lintian, install/upgrade/remove/purge (Tests/System/package-test.sh)"
# The fuzzers' sanitizer build in .build-fuzz and the package (two static release builds) were
# made beside the tests. Now 15 s of libFuzzer per target, which takes its time, not its CPU,
# beside lintian and the package's life in a real systemd, which mostly waits on the box.
# The package is skipped with the system test's reason when sdbox cannot run here.
fuzzing=""
if ! wait_for_build "$logs/fuzz-build.rc" "$(cap 8)"; then
    cat "$logs/fuzz-build.log"
    bad "fuzz: the sanitizer build failed"
else
    timeout "$(cap 4)" bash scripts/fuzz.sh 15 >"$logs/fuzz.log" 2>&1 &
    fuzzing=$!
fi
if [[ -n "$package_reason" ]]; then
    if is_ci; then bad "package: $package_reason"; else echo "skipping: $package_reason"; skipped+=("package: $package_reason"); fi
elif ! wait_for_build "$pkgwork/build.rc" "$(cap 12)"; then
    tail -30 "$pkgwork/build.log"
    bad "package: dpkg-buildpackage failed"
elif SDBOX_NAME=ferry-pkgtest timeout "$(cap 4)" bash Tests/System/package-test.sh "$(ls "$pkgwork"/ferry_*.deb | head -1)"; then
    ok "package"
else
    bad "package"
fi
if [[ -n "$fuzzing" ]]; then
    wait "$fuzzing"; fuzz_status=$?
    echo "--- scripts/fuzz.sh 15 (exit $fuzz_status)"; cat "$logs/fuzz.log"
    if [[ $fuzz_status -eq 0 ]]; then ok "fuzz"; else bad "fuzz (time cap, or see .build-fuzz/logs/)"; fi
fi
kill "$background_builds" 2>/dev/null
rm -rf "$pkgwork"

finish
