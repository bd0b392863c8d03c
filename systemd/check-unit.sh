#!/bin/bash
# Offline checks of systemd/ferryd.service on a machine without a running systemd:
#   1. `systemd-analyze verify` prints nothing (any output is a warning and fails the check);
#   2. `systemd-analyze security --offline=yes` exposure is at most 1.5.
# verify checks that ExecStart=/ExecReload= binaries exist, so it runs on a temporary copy whose
# /usr/local/bin/ferryd and /usr/local/bin/ferry point at built binaries ($FERRYD/$FERRY, else
# .build/{release,debug}/, else /bin/true: the unit's syntax is what is being checked).
# Usage: systemd/check-unit.sh [UNIT]      exit 0 when both checks pass
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
unit=${1:-$root/systemd/ferryd.service}
threshold=1.5

pick() {  # first existing executable among the arguments
    for candidate in "$@"; do [[ -n "$candidate" && -x "$candidate" ]] && { echo "$candidate"; return; }; done
    echo /bin/true
}
ferryd=$(pick "${FERRYD:-}" "$root/.build/release/ferryd" "$root/.build/debug/ferryd")
ferry=$(pick "${FERRY:-}" "$root/.build/release/ferry" "$root/.build/debug/ferry")

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
copy="$tmp/$(basename "$unit")"
sed -e "s|/usr/local/bin/ferryd|$ferryd|g" -e "s|/usr/local/bin/ferry |$ferry |g" "$unit" > "$copy"

failed=0
echo "== systemd-analyze verify $(basename "$unit") (binaries: $ferryd, $ferry)"
output=$(systemd-analyze verify "$copy" 2>&1); rc=$?
if [[ -n "$output" || $rc -ne 0 ]]; then
    echo "$output"; echo "FAIL: verify printed warnings (rc=$rc)"; failed=1
else
    echo "ok: no warnings"
fi

echo "== systemd-analyze security --offline=yes $(basename "$unit")"
report=$(systemd-analyze security --offline=yes "$unit" 2>&1)
echo "$report" | grep -F '✗' || true
score=$(echo "$report" | sed -n 's/.*Overall exposure level for .*: \([0-9.]*\) .*/\1/p')
echo "exposure: ${score:-unknown} (threshold $threshold)"
if [[ -z "$score" ]] || ! awk -v s="$score" -v t="$threshold" 'BEGIN { exit !(s <= t) }'; then
    echo "FAIL: exposure above $threshold"; failed=1
fi
exit $failed
