#!/usr/bin/env bash
# Explores two-way sync with fresh seeds: the two-way model test (TwoWayModelTests) on every
# installed server under every policy, each case drawing a new seed and running rounds for a
# while, until the given minutes have passed. CI replays the seed corpus instead
# (Tests/TwoWay/seeds.txt), so it passes or fails on the code; this is where
# new failing seeds are found, to be added there.
#
#   bash scripts/explore-two-way.sh MINUTES [LOG-DIRECTORY]
#
# Environment: FERRY_TWO_WAY_SECONDS (each case's time per run, default 60), FERRY_TWO_WAY_GENERATOR
# (interleaved, the default: any write at any time; or ordered),
# FERRY_TWO_WAY_SERVERS and FERRY_TWO_WAY_POLICIES (comma-separated, to narrow the cases),
# FERRY_VENV (where the Python servers are, default ~/.cache/ferry/venv).
#
# Builds first, then runs a snapshot of the build (the test binary and ferry, copied into the
# log directory), so building again meanwhile does not change what runs. A run of every case
# takes about cases x seconds / the machine's cores; runs follow one another until MINUTES are
# up (the last one is finished, not cut). Prints, per case and in total: server x policy
# seconds, seeds, steps, rounds, conflicts checked, answers lost, pushes killed, double
# pushes; then each failure with its seed and the corpus line that replays it. Exit status
# 0 when no seed failed.
set -uo pipefail
minutes=${1:?usage: scripts/explore-two-way.sh MINUTES [LOG-DIRECTORY]}
cd "$(dirname "$0")/.." || exit 2
export PATH="${FERRY_VENV:-$HOME/.cache/ferry/venv}/bin:$PATH"
logs=${2:-$(mktemp -d /tmp/ferry-explore.XXXXXX)}
mkdir -p "$logs"

swift build --build-tests >"$logs/build.log" 2>&1 || { tail -20 "$logs/build.log"; exit 2; }
bin=$(swift build --show-bin-path)
cp "$bin/FerryPackageTests.xctest" "$bin/ferry" "$logs/" || exit 2

end=$(( $(date +%s) + minutes * 60 ))
run=0
while [ "$(date +%s)" -lt "$end" ]; do
    run=$((run + 1))
    FERRY_TWO_WAY_EXPLORE=1 FERRY_TWO_WAY_FERRY="$logs/ferry" FERRY_TWO_WAY_SECONDS="${FERRY_TWO_WAY_SECONDS:-60}" \
        "$logs/FerryPackageTests.xctest" --testing-library swift-testing --filter 'TwoWayModelTests/freshSeedsMatchTheModel' \
        >"$logs/run-$run.log" 2>&1
    echo "run $run: $(grep -a -c '^two-way run:' "$logs/run-$run.log") cases, $(grep -a -c 'result=fail' "$logs/run-$run.log") failed ($logs/run-$run.log)"
done

# Each case prints one line: two-way run: server=S policy=P seed=N seconds=T steps=... result=pass|fail
{
    printf "%-26s %6s %5s %7s %6s %9s %6s %5s %7s %6s\n" "server policy" secs seeds steps rounds conflicts lost kills doubles failed
    grep -a -h '^two-way run:' "$logs"/run-*.log | awk '
        {
            for (i = 3; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
            key = f["server"] " " f["policy"]; keys[key] = 1
            seeds[key]++; failed[key] += (f["result"] == "fail")
            for (j = 1; j <= 8; j++) { name = names[j]; sum[key, name] += f[name] }
        }
        BEGIN { split("seconds steps rounds conflicts lost kills doubles x", names, " ") }
        END {
            for (k in keys) {
                printf "%-26s %6d %5d %7d %6d %9d %6d %5d %7d %6d\n", k, sum[k, "seconds"], seeds[k], sum[k, "steps"], sum[k, "rounds"],
                    sum[k, "conflicts"], sum[k, "lost"], sum[k, "kills"], sum[k, "doubles"], failed[k]
                for (j = 1; j <= 7; j++) total[names[j]] += sum[k, names[j]]
                total["seeds"] += seeds[k]; total["failed"] += failed[k]
            }
            printf "~%-25s %6d %5d %7d %6d %9d %6d %5d %7d %6d\n", "total", total["seconds"], total["seeds"], total["steps"], total["rounds"],
                total["conflicts"], total["lost"], total["kills"], total["doubles"], total["failed"]
        }' | sort | sed 's/^~/ /'
} | tee "$logs/summary.txt"

if grep -a -q 'result=fail' "$logs"/run-*.log; then
    echo "failing seeds (add each corpus line to Tests/TwoWay/seeds.txt):"
    grep -a -h -E 'FERRY_TWO_WAY_SEED=|corpus line:' "$logs"/run-*.log | sed 's/^[^A-Za-z]*//' | tee -a "$logs/summary.txt"
    exit 1
fi
echo "no seed failed; logs in $logs"
