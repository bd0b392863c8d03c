#!/usr/bin/env bash
# Runs `swift test` (already built) as several processes at once, each over a share of the
# suites, and fails when any of them fails.
#
#   bash scripts/swift-test-shards.sh SHARDS LOGDIR [SKIP-REGEX [ALONE-REGEX [OWN-REGEX]]]
#
# Why: most of Ferry's tests wait — for a Radicale answer, a run loop, a server's backoff — on a
# thread of Swift's cooperative pool, which has one thread per core. On a two-core machine two
# waiting tests stall every other test in the process. Separate processes have pools of their
# own, so their waits overlap; the CPU they need is what it was.
#
# The shards run the test binary itself: `swift test` holds a lock on .build for its whole run,
# so several of them would only queue. Suites (not single tests) are dealt out round-robin in
# name order, so the shared servers a suite starts (DAVServer.shared) are started once per
# process that needs them. Each shard's output goes to LOGDIR/shard-N.log and is printed whole
# when all have ended, in order, so a failure reads as one block. SKIP-REGEX leaves out suites
# whose name matches it; each suite matching ALONE-REGEX gets FERRY_ALONE_PARTS (default 3)
# processes of its own besides the SHARDS (a long suite that would otherwise decide when its
# shard ends); a test function of such a suite matching OWN-REGEX gets a process to itself
# (one with many more cases than its siblings).
set -uo pipefail
cd "$(dirname "$0")/.."

usage="usage: swift-test-shards.sh SHARDS LOGDIR [SKIP-REGEX [ALONE-REGEX [OWN-REGEX]]]"
shards=${1:?$usage}
logs=${2:?$usage}
skip=${3:-'^$'}
alone=${4:-'^$'}
own=${5:-'^$'}
mkdir -p "$logs"

list=$(swift test list --skip-build 2>"$logs/list.err") || { cat "$logs/list.err"; exit 1; }
binary="$(swift build --show-bin-path)/FerryPackageTests.xctest"
[[ -x "$binary" ]] || { echo "error: no test binary at $binary (swift build --build-tests first)" >&2; exit 1; }
mapfile -t all < <(grep -E '^[A-Za-z0-9_]+\.[A-Za-z0-9_.]+/' <<<"$list" | cut -d/ -f1 | sort -u |
                   grep -Ev "^[A-Za-z0-9_]+\.($skip)\$")
suites=() solos=()
for suite in "${all[@]}"; do
    if [[ "$suite" =~ ^[A-Za-z0-9_]+\.($alone)$ ]]; then solos+=("$suite"); else suites+=("$suite"); fi
done
if [[ ${#all[@]} -eq 0 ]]; then
    echo "error: swift test list named no suites" >&2
    exit 1
fi
(( shards > ${#suites[@]} )) && shards=${#suites[@]}

declare -a patterns
for i in "${!suites[@]}"; do
    shard=$(( i % shards ))
    name=${suites[$i]//./\\.}
    patterns[$shard]+="${patterns[$shard]:+|}$name"
done
# A suite alone is split by its test functions, dealt out round-robin, so its longest test,
# not the suite's sum, decides when it is done: on two cores the processes of the other
# suites have ended by then, and a suite in two parts left one of them running alone for
# two minutes.
parts=${FERRY_ALONE_PARTS:-3}
for suite in "${solos[@]}"; do
    mapfile -t functions < <(grep -F "$suite/" <<<"$list" | cut -d/ -f2 | sed 's/(.*//' | sort -u)
    escaped=${suite//./\\.}
    shares=()
    dealt=0
    for function in "${functions[@]}"; do
        if [[ "$function" =~ ^($own)$ ]]; then
            patterns[$shards]="$escaped/($function)\\("
            shards=$(( shards + 1 ))
            continue
        fi
        part=$(( dealt % parts ))
        dealt=$(( dealt + 1 ))
        shares[$part]+="${shares[$part]:+|}$function"
    done
    for part in "${!shares[@]}"; do
        patterns[$shards]="$escaped/(${shares[$part]})\\("
        shards=$(( shards + 1 ))
    done
done

echo "${#all[@]} suites in $shards processes (${#solos[@]} alone, each in up to $parts)"
if [[ -n "${FERRY_SHARDS_DRY_RUN:-}" ]]; then  # print each process's filter, run nothing
    for (( shard = 0; shard < shards; shard++ )); do echo "$shard: ${patterns[$shard]}"; done
    exit 0
fi
pids=()
for (( shard = 0; shard < shards; shard++ )); do
    pattern=${patterns[$shard]}
    [[ "$pattern" == */* ]] || pattern="($pattern)/"
    NO_COLOR=1 "$binary" --testing-library swift-testing --filter "^$pattern" >"$logs/shard-$shard.log" 2>&1 &
    pids+=($!)
done
status=0
for (( shard = 0; shard < shards; shard++ )); do
    if wait "${pids[$shard]}"; then
        codes[$shard]=0
    else
        codes[$shard]=$?
        status=1
    fi
done
for (( shard = 0; shard < shards; shard++ )); do
    echo "--- shard $shard (exit ${codes[$shard]}): $(grep -a -E '^. Test run with' "$logs/shard-$shard.log" | tail -1)"
    cat "$logs/shard-$shard.log"
done
echo "--- shards:"
for (( shard = 0; shard < shards; shard++ )); do
    echo "shard $shard: exit ${codes[$shard]}: $(grep -a -E '^. Test run with|Executed [0-9]+ tests' "$logs/shard-$shard.log" | tail -2 | tr '\n' ' ')"
done
exit $status
