#!/bin/bash
# ferryd under a real systemd: the system test (run by .ci/run; needs root).
#
#   FERRYD=.build/release/ferryd FERRY=.build/release/ferry Tests/System/systemd-test.sh
#   Tests/System/systemd-test.sh --infra-only     # only the parts that need no ferryd
#   Tests/System/systemd-test.sh --self-test      # every step the Python stand-ins implement
#                                                 # (Tests/System/standins/): checks this script
#
# Boots a throwaway systemd with ../shared/tools/sdbox (SDBOX_NETWORK=host, so the box reaches
# the Parse test server this script starts on the host's 127.0.0.1), installs the unit, the
# binaries, the user ferry (systemd-sysusers), a configuration and a LoadCredential'ed REST key,
# then checks: start -> active, STATUS names the store, rows land in the database, journal
# fields, Prometheus metrics served under the hardened unit, the readable replica (a member of
# the group ferry reads it and runs `ferry status` with the schedule, cannot write it; a user
# outside the group cannot read it), synchronous reload adding a store, a refused reload keeping
# the old configuration, a watchdog kill and restart of a ferryd frozen by SIGSTOP (its
# watchdog pings come from its main loop's timer, so any wedge of that loop looks the same), a second instance ferryd@tenant beside it (its own replica,
# `ferry --instance`), one pass of a store at a time under the unit's sandbox (root's `ferry
# sync` waits for ferryd's pass, asleep, and exits 75 at 60 s; `ferry push` racing ferryd pushes
# each create once), a clean stop with PRAGMA integrity_check ok, and the group still reading
# the replica after the stop. The last line is "N passed, N failed"; exit 1 on any failure.
set -uo pipefail

root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
SDBOX=${SDBOX:-$root/../shared/tools/sdbox/sdbox}
export SDBOX_NAME=${SDBOX_NAME:-ferry-systest}
export SDBOX_NETWORK=host
FERRYD=${FERRYD:-$root/.build/debug/ferryd}
FERRY=${FERRY:-$root/.build/debug/ferry}
INFRA_ONLY=0
SELF_TEST=0
case "${1:-}" in
    --infra-only) INFRA_ONLY=1 ;;
    --self-test) SELF_TEST=1; FERRYD=$root/Tests/System/standins/ferryd.py; FERRY=$root/Tests/System/standins/ferry.py ;;
    "") ;;
    *) echo "usage: $0 [--infra-only | --self-test]" >&2; exit 2 ;;
esac

# MESSAGE_IDs (Sources/FerryKit/Daemon/Systemd/MessageID.swift).
ID_PASS_STARTED=2e864231d3ca431a8aa876e279b76589
ID_PASS_FINISHED=214e4b6757ab436fa07ada0da2a4271a
ID_RELOAD=1c2b8dda70ee45fcba1aece27793ba66
ID_RELOAD_FAILED=981d499fa62c454795b0cc04f9653d4b

DB=/var/lib/ferry/ferry.db
STATE_FILE=/run/ferry/reload-state
APP_ID=ferry-test
REST_KEY=rest-secret-$RANDOM$RANDOM

passed=0; failed=0; skipped=0
pass() { passed=$((passed + 1)); echo "PASS: $*"; }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }
check() { local name=$1; shift; if "$@"; then pass "$name"; else fail "$name"; fi; }
# A step only the real binaries can pass (metrics, ferry status, --instance, kept WAL files):
# under --self-test the stand-ins do not implement it, and it is reported as skipped.
check_real() {
    if [[ $SELF_TEST -eq 1 ]]; then skipped=$((skipped + 1)); echo "SKIP (stand-ins): $1"; else check "$@"; fi
}
box() { "$SDBOX" exec "$@"; }
# wait_until SECONDS CMD...: true once CMD succeeds, false after SECONDS.
wait_until() {
    local limit=$(( $1 * 2 )); shift
    for ((i = 0; i < limit; i++)); do "$@" && return 0; sleep 0.5; done
    return 1
}
finish() {
    echo "$passed passed, $failed failed, $skipped skipped"
    [[ $failed -eq 0 ]]
    exit $?
}

work=$(mktemp -d)
server_pid=""
box_up=0
cleanup() {
    if [[ $box_up -eq 1 ]]; then
        if [[ $failed -gt 0 ]]; then
            echo "--- journal of ferryd (last 60 lines) ---"
            box journalctl -u ferryd --no-pager -n 60 2>/dev/null || true
        fi
        "$SDBOX" down >/dev/null 2>&1 || echo "warning: sdbox down failed"
    fi
    [[ -n "$server_pid" ]] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

[[ $(id -u) -eq 0 ]] || { fail "must run as root (sdbox boots systemd)"; finish; }
[[ -x "$SDBOX" ]] || { fail "sdbox not found at $SDBOX"; finish; }
if [[ $INFRA_ONLY -eq 0 ]]; then
    [[ -x "$FERRYD" && -x "$FERRY" ]] || { fail "binaries missing: FERRYD=$FERRYD FERRY=$FERRY"; finish; }
fi

# --- the Parse test server on the host ------------------------------------------------------
mkfifo "$work/server.out"
python3 "$root/Tests/Servers/parse_server.py" --port 0 --app-id "$APP_ID" --rest-key "$REST_KEY" > "$work/server.out" &
server_pid=$!
exec 3< "$work/server.out"
port=""
while read -r -t 30 line <&3; do
    [[ "$line" == PORT\ * ]] && { port=${line#PORT }; break; }
done
check "parse server started (port ${port:-none})" test -n "$port"
[[ -n "$port" ]] || finish
base=http://127.0.0.1:$port
seed() { curl -sS -f -X POST -H 'Content-Type: application/json' --data-binary "$2" "$base/__admin/seed" | grep -q "\"created\": *$1"; }
check "seeded 300 Quote objects" seed 300 '{"class":"Quote","count":300}'
check "seeded 40 Author objects" seed 40 '{"class":"Author","count":40}'

# --- files to install ------------------------------------------------------------------------
printf '%s' "$REST_KEY" > "$work/parse-rest-key"; chmod 600 "$work/parse-rest-key"
store_section() {  # NAME CLASS
    printf '\n[store %s]\nkind = parse\nurl = %s/parse\nclass = %s\napplication-id = %s\nrest-api-key = credential:parse-rest-key\ninterval = 10s\njitter = 1s\n' \
        "$1" "$base" "$2" "$APP_ID"
}
metrics_port=$(python3 -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
write_config() {  # extra sections on stdin are appended
    { printf '[ferry]\nlog-level = debug\nmetrics-listen = 127.0.0.1:%s\n' "$metrics_port"; store_section quotes Quote; cat; } > "$work/ferry.conf"
    chmod 644 "$work/ferry.conf"
}
install_config() { "$SDBOX" cp "$work/ferry.conf" /etc/ferry/ferry.conf >/dev/null; }
cat > "$work/credential.conf" <<CONF
[Service]
LoadCredential=parse-rest-key:/etc/ferry/credentials/parse-rest-key
CONF
cat > "$work/watchdog-test.conf" <<CONF
[Service]
WatchdogSec=5
CONF
chmod 644 "$work"/*.conf

# --- the box ---------------------------------------------------------------------------------
check "sdbox up" "$SDBOX" up
box_up=1
# The unit keeps its /usr/local/bin paths: the binaries are copied there (not run from the
# checkout, which the user ferry might not be allowed to traverse).
extras=()
if [[ $INFRA_ONLY -eq 0 ]]; then
    extras=("$FERRYD:/usr/local/bin/ferryd" "$FERRY:/usr/local/bin/ferry")
else
    # Stand-ins so the unit verifies; nothing below starts them.
    printf '#!/bin/sh\nexit 0\n' > "$work/stub"; chmod 755 "$work/stub"
    extras=("$work/stub:/usr/local/bin/ferryd" "$work/stub:/usr/local/bin/ferry")
fi
check "unit and binaries installed" "$SDBOX" install-unit "$root/systemd/ferryd.service" "${extras[@]}" \
    "$work/parse-rest-key:/etc/ferry/credentials/parse-rest-key" \
    "$work/credential.conf:/etc/systemd/system/ferryd.service.d/credential.conf" \
    "$work/credential.conf:/etc/systemd/system/ferryd@tenant.service.d/credential.conf" \
    "$root/systemd/ferryd@.service:/etc/systemd/system/ferryd@.service" \
    "$root/systemd/ferry.sysusers:/etc/sysusers.d/ferry.conf"
check "systemd-sysusers makes the user and group ferry" box sh -c 'systemd-sysusers && getent passwd ferry >/dev/null && getent group ferry >/dev/null'
write_config < /dev/null
install_config
box systemctl daemon-reload
verify_in_box() { local out; out=$(box systemd-analyze verify "$1" 2>&1); [[ -z "$out" ]] || { echo "$out"; return 1; }; }
check "systemd-analyze verify in the box prints nothing" verify_in_box /etc/systemd/system/ferryd.service
check "systemd-analyze verify of ferryd@tenant prints nothing" verify_in_box ferryd@tenant.service
check "credential file is root-only (0600)" test "$(box stat -c %a /etc/ferry/credentials/parse-rest-key | tr -d '\r')" = 600
credential_reaches_service() {
    local got
    got=$(box systemd-run --quiet --wait --pipe -p User=ferry \
        -p LoadCredential=parse-rest-key:/etc/ferry/credentials/parse-rest-key \
        /bin/sh -c 'cat "$CREDENTIALS_DIRECTORY/parse-rest-key"' 2>&1)
    [[ "$got" == "$REST_KEY" ]]
}
check "LoadCredential delivers the key to a service of the user ferry" credential_reaches_service
server_reachable() {
    box curl -sS -f -H "X-Parse-Application-Id: $APP_ID" -H "X-Parse-REST-API-Key: $REST_KEY" \
        "$base/parse/classes/Quote?limit=0&count=1" | grep -q '"count": *300'
}
check "the box reaches the test server on 127.0.0.1" server_reachable

if [[ $INFRA_ONLY -eq 1 ]]; then
    echo "(--infra-only: ferryd steps not run)"
    finish
fi

# --- check-config reads the secrets as the service will ------------------------------------------
# Run as root, it still refuses a credential the unit does not load (root could read the file),
# naming the drop-in and the restart; with the drop-in back it passes.
unloaded_credential_refused() {
    local out rc
    box mv /etc/systemd/system/ferryd.service.d/credential.conf /root/credential.conf.off
    box systemctl daemon-reload
    out=$(box ferry check-config 2>&1); rc=$?
    box mv /root/credential.conf.off /etc/systemd/system/ferryd.service.d/credential.conf
    box systemctl daemon-reload
    echo "$out" | tail -2
    [[ $rc -eq 78 ]] && grep -q 'LoadCredential=parse-rest-key:/etc/ferry/credentials/parse-rest-key' <<<"$out" \
        && grep -q 'systemctl restart' <<<"$out"
}
check "ferry check-config refuses a credential the unit does not load (exit 78, names LoadCredential= and the restart)" unloaded_credential_refused
check "ferry check-config passes once the unit loads it" box ferry check-config

# --- start -----------------------------------------------------------------------------------
show() { box systemctl show -P "$1" ferryd | tr -d '\r'; }
check "systemctl start ferryd" box systemctl start ferryd
check "ferryd is active" test "$(show ActiveState)" = active
status_names_store() { show StatusText | grep -q "$1"; }
check "STATUS= mentions the store" wait_until 30 status_names_store quotes
rows() { box sqlite3 "$DB" "SELECT count(*) FROM $1" 2>/dev/null | tr -d '\r'; }
rows_are() { [[ "$(rows "$1")" == "$2" ]]; }
check "300 quotes rows in $DB" wait_until 60 rows_are quotes 300

journal_has_pass_entries() {
    box journalctl -u ferryd FERRY_STORE=quotes -o json --no-pager | python3 -c '
import json, sys
entries = [json.loads(line) for line in sys.stdin if line.strip()]
ids = {sys.argv[1], sys.argv[2]}
passes = [e for e in entries if e.get("MESSAGE_ID") in ids and e.get("FERRY_PASS")]
ok = passes and all(e.get("FERRY_STORE") == "quotes" and e.get("CODE_FILE") and e.get("PRIORITY") for e in passes)
sys.exit(0 if ok else 1)' "$ID_PASS_STARTED" "$ID_PASS_FINISHED"
}
check "journal: pass entries with FERRY_STORE, FERRY_PASS, MESSAGE_ID, CODE_FILE" wait_until 20 journal_has_pass_entries
# The hardened unit lets libdispatch set its workers' priority (LimitNICE=-4): no EACCES noise.
# systemd can grant that only up to its own hard limit; a container whose PID 1 has none (this
# sandbox's) cannot show it, and that is said, not counted as a pass.
check "unit: LimitNICE allows nice -4 (RLIMIT_NICE 24)" [ "$(show LimitNICE)" = 24 ]
no_priority_noise() { ! box journalctl -u ferryd --no-pager -o cat | grep -q "Failed to set thread priority"; }
pid1_nice=$(box awk '/Max nice priority/ {print $5}' /proc/1/limits)
if [[ "$pid1_nice" == unlimited || "${pid1_nice:-0}" -ge 24 ]]; then
    check "journal: no 'Failed to set thread priority' line from libdispatch" no_priority_noise
else
    skipped=$((skipped + 1))
    echo "SKIP: journal without libdispatch priority noise: the box's PID 1 may not raise RLIMIT_NICE (hard limit ${pid1_nice:-0})"
fi
main_pid=$(show MainPID)

# --- metrics and the readable replica ----------------------------------------------------------
metrics_served() { box curl -sS -f "http://127.0.0.1:$metrics_port/metrics" | grep -q 'ferry_passes_total{store="quotes",outcome="ok"} [1-9]'; }
check_real "Prometheus metrics served under the hardened unit (127.0.0.1:$metrics_port)" wait_until 20 metrics_served
box useradd -M -N -G ferry appreader
box useradd -M -N outsider
as_user() { local user=$1; shift; box runuser -u "$user" -- "$@"; }
reader_counts() { [[ "$(as_user appreader sqlite3 "$DB" 'SELECT count(*) FROM quotes' 2>/dev/null | tr -d '\r')" == 300 ]]; }
check "a member of the group ferry reads the replica while ferryd writes it" reader_counts
reader_status() {
    as_user appreader ferry status --json | python3 -c '
import json, sys
rows = {r["store"]: r for r in map(json.loads, filter(str.strip, sys.stdin))}
q = rows.get("quotes", {})
sys.exit(0 if q.get("state") == "ok" and q.get("records") == 300 and isinstance(q.get("next_pass_in_seconds"), int) else 1)'
}
check_real "... runs ferry status, which finds the service's replica and shows the next pass" wait_until 10 reader_status
reader_cannot_write() { ! as_user appreader sqlite3 "$DB" 'CREATE TABLE reader_was_here(a)' 2>/dev/null; }
check "... and cannot write it" reader_cannot_write
outsider_refused() { ! as_user outsider sqlite3 "$DB" 'SELECT count(*) FROM quotes' >/dev/null 2>&1 && ! as_user outsider ls /var/lib/ferry >/dev/null 2>&1; }
check "a user outside the group can neither read the replica nor list its directory" outsider_refused
modes() { box stat -c '%a %U:%G' /var/lib/ferry /var/lib/ferry/ferry.db /run/ferry | tr -d '\r' | tr '\n' ' '; }
check "modes: 750 ferry:ferry directories, 640 replica ($(modes))" test "$(modes)" = "750 ferry:ferry 640 ferry:ferry 750 ferry:ferry "

# --- synchronous reload adding a store ---------------------------------------------------------
generation() { box sh -c "sed -n 's/^generation=//p' $STATE_FILE" 2>/dev/null | tr -d '\r'; }
result() { box sh -c "sed -n 's/^result=//p' $STATE_FILE" 2>/dev/null | tr -d '\r'; }
before=$(generation)
store_section authors Author | write_config
install_config
reload_or_say_why() {  # systemctl reload, and on failure what the unit's journal says of it
    box systemctl reload ferryd && return 0
    box journalctl -u ferryd --no-pager -o cat -n 15 | tr -d '\r' | sed 's/^/  | /'
    return 1
}
check "systemctl reload (store added) succeeds" reload_or_say_why
after=$(generation)
check "reload acknowledged before systemctl returned (generation ${before:-?} -> ${after:-?})" \
    test -n "$before" -a -n "$after" -a "${after:-0}" -gt "${before:-0}"
check "reload-state result=ok" test "$(result)" = ok
check "same main process after reload" test "$(show MainPID)" = "$main_pid"
check "40 authors rows (new store synced)" wait_until 60 rows_are authors 40
journal_has() { box journalctl -u ferryd --no-pager -o cat "$@" | grep -q .; }
check "journal has the reload event" journal_has "MESSAGE_ID=$ID_RELOAD"

# --- refused reload -------------------------------------------------------------------------
# A problem outside any store's section refuses the file whole (one in a store's own section
# fails that store alone).
{ printf '[ferry]\nmax-concurrent-passes = nope\n\n'; store_section authors Author; } | write_config
install_config
before=$(generation)
check "systemctl reload with a broken configuration fails" bash -c '! "$0" exec systemctl reload ferryd' "$SDBOX"
check "ferryd still active after the refused reload" test "$(show ActiveState)" = active
check "same main process after the refused reload" test "$(show MainPID)" = "$main_pid"
check "reload-state result=error, generation advanced" test "$(result)" = error -a "$(generation)" -gt "${before:-0}"
check "journal has the reload failure" journal_has "MESSAGE_ID=$ID_RELOAD_FAILED"
journal_names_problem() { box journalctl -u ferryd --no-pager -o cat | grep -q "nope"; }
check "journal names the bad value" journal_names_problem
store_section authors Author | write_config
install_config
check "reload with the configuration repaired succeeds" box systemctl reload ferryd

# --- watchdog ------------------------------------------------------------------------------
"$SDBOX" cp "$work/watchdog-test.conf" /etc/systemd/system/ferryd.service.d/watchdog-test.conf >/dev/null
box systemctl daemon-reload
box systemctl restart ferryd
restarts0=$(show NRestarts)
# Frozen: no watchdog ping; systemd's SIGABRT comes with a SIGCONT, so the process gets it.
sleep 2
box systemctl kill --kill-whom=main --signal=SIGSTOP ferryd
restarted() { [[ "$(show NRestarts)" -gt "$restarts0" && "$(show ActiveState)" == active ]]; }
check "hang -> watchdog kill -> restart (NRestarts > $restarts0)" wait_until 45 restarted
watchdog_logged() { box journalctl -u ferryd --no-pager -o cat | grep -q "Watchdog timeout"; }
aborted() { box journalctl -u ferryd --no-pager -o cat | grep -qE "SIGABRT|status=6/ABRT"; }
# journald may write systemd's line a moment after the restart is visible.
check "journal: systemd saw the watchdog timeout" wait_until 10 watchdog_logged
check "journal: killed with SIGABRT" wait_until 10 aborted
box rm -f /etc/systemd/system/ferryd.service.d/watchdog-test.conf
box systemctl daemon-reload
box systemctl reset-failed ferryd 2>/dev/null
check "restart without the watchdog drop-in" box systemctl restart ferryd
check "ferryd active again" wait_until 20 bash -c '[[ "$("$0" exec systemctl show -P ActiveState ferryd | tr -d "\r")" == active ]]' "$SDBOX"

# --- a second instance beside it --------------------------------------------------------------
{ printf '[ferry]\n'; store_section authors Author; } > "$work/tenant.conf"
chmod 644 "$work/tenant.conf"
"$SDBOX" cp "$work/tenant.conf" /etc/ferry/tenant.conf >/dev/null
box systemctl daemon-reload
check "systemctl start ferryd@tenant" box systemctl start ferryd@tenant
tenant_rows() { [[ "$(box sqlite3 /var/lib/ferry/tenant/ferry.db 'SELECT count(*) FROM authors' 2>/dev/null | tr -d '\r')" == 40 ]]; }
check "ferryd@tenant keeps its own replica (/var/lib/ferry/tenant/ferry.db, 40 authors)" wait_until 60 tenant_rows
tenant_status() { box ferry status --instance tenant --json | python3 -c 'import json, sys; r = json.loads(sys.stdin.readline()); sys.exit(0 if (r["store"], r["state"], r["records"]) == ("authors", "ok", 40) else 1)'; }
check_real "ferry status --instance tenant reads that instance" wait_until 10 tenant_status
check "systemctl reload ferryd@tenant (its own runtime directory)" box systemctl reload ferryd@tenant
check "both instances active side by side" test "$(show ActiveState) $(box systemctl show -P ActiveState ferryd@tenant | tr -d '\r')" = "active active"
check_real "ferry log --instance tenant reads its journal" bash -c '"$0" exec ferry log --instance tenant --lines 20 | grep -q "authors"' "$SDBOX"
# The main unit owns /run/ferry and systemd removes it whole when that unit stops: an
# instance's runtime files must not be there.
check "systemctl restart ferryd beside ferryd@tenant" box systemctl restart ferryd
check "ferryd@tenant keeps its runtime directory (/run/ferry-tenant/ferryd.pid)" box test -s /run/ferry-tenant/ferryd.pid
check "systemctl reload ferryd@tenant after the main unit restarted" box systemctl reload ferryd@tenant
tenant_schedule() { box ferry status --instance tenant --json | python3 -c 'import json, sys; r = json.loads(sys.stdin.readline()); sys.exit(0 if r["syncing"] is not None else 1)'; }
check_real "ferry status --instance tenant still reads its schedule" wait_until 10 tenant_schedule
check "systemctl stop ferryd@tenant" box systemctl stop ferryd@tenant

# --- one pass of a store at a time, under the unit's sandbox ------------------------------------
# ferryd sees neither root's processes nor the boot id (ProtectProc=invisible, ProcSubset=pid):
# whether a store is claimed must not depend on either. ferryd lists a store of 400 pages, each
# held 0.2 s by the server, while root runs `ferry sync` of it: that waits, naming ferryd, asleep
# (CPU), and exits 75 at 60 s having done nothing; the server never serves two listings of the
# class at once. Then `ferry push` races ferryd over three local creates, five times: each create
# is pushed once and the replica holds as many rows as the server objects.
race_sections() {
    printf '\n[store big]\nkind = parse\nurl = %s/parse\nclass = Big\napplication-id = %s\nrest-api-key = credential:parse-rest-key\npage-size = 10\ninterval = 1h\n' "$base" "$APP_ID"
    printf '\n[store notes]\nkind = parse\nurl = %s/parse\nclass = Note\napplication-id = %s\nrest-api-key = credential:parse-rest-key\npush = yes\ninterval = 1h\n' "$base" "$APP_ID"
}
admin() { curl -sS -f -X POST -H 'Content-Type: application/json' --data-binary "$2" "$base/__admin/$1" >/dev/null; }
stat_of() { curl -sS -f "$base/__admin/stats" | python3 -c "import json, sys; print(json.load(sys.stdin)$1)"; }
claim_of() { box sqlite3 "$DB" "SELECT c.pid || ' ' || c.command FROM ferry_pass_claims c JOIN ferry_stores s ON s.store_id = c.store_id WHERE s.name = '$1'" 2>/dev/null | tr -d '\r'; }
if [[ $SELF_TEST -eq 1 ]]; then
    skipped=$((skipped + 1)); echo "SKIP (stand-ins): one pass of a store at a time under the unit's sandbox"
else
    check "seeded 4000 Big objects (400 pages of 10)" seed 4000 '{"class":"Big","count":4000,"size":100}'
    admin stats/reset '{}'
    admin fault '{"next":100000,"kind":"stall","seconds":0.2}'
    { store_section authors Author; race_sections; } | write_config
    install_config
    check "reload adding a store of 400 pages and a push store" box systemctl reload ferryd
    ferryd_pid=$(show MainPID)
    ferryd_holds_big() { [[ "$(claim_of big)" == "$ferryd_pid ferryd" ]]; }
    check "ferryd claims the store it lists (pid $ferryd_pid)" wait_until 30 ferryd_holds_big
    check "the claims' lock file has the replica's owner and mode (640 ferry:ferry)" \
        test "$(box stat -c '%a %U:%G' "$DB-passes" | tr -d '\r')" = "640 ferry:ferry"

    box sh -c 'ferry sync big > /root/race-sync.out 2>&1 & echo $! > /root/race-sync.pid; wait $!; echo $? > /root/race-sync.rc' &
    race_sync=$!
    sync_said_wait() { box grep -q "ferryd (pid $ferryd_pid) is syncing it; waiting up to 1m" /root/race-sync.out 2>/dev/null; }
    check "root's ferry sync of the store waits, naming ferryd" wait_until 20 sync_said_wait
    waiting_since=$(date +%s)
    sync_pid=$(box cat /root/race-sync.pid | tr -d '\r')
    ticks() { box awk '{print $14 + $15}' "/proc/$sync_pid/stat" | tr -d '\r'; }
    hz=$(getconf CLK_TCK)
    t0=$(ticks); sleep 10; t1=$(ticks)
    cpu=$(( (t1 - t0) * 1000 / (hz * 10) ))  # per mille of a core
    echo "ferry sync waiting: $((t1 - t0)) ticks of 1/$hz s in 10 s (${cpu}‰ of a core)"
    check "... asleep while it waits: at most 1% of a core over 10 s ($((t1 - t0)) ticks)" test "$((t1 - t0))" -le "$((hz / 10))" -a "$(claim_of big)" = "$ferryd_pid ferryd"
    wait "$race_sync"
    waited=$(( $(date +%s) - waiting_since ))
    sync_rc=$(box cat /root/race-sync.rc | tr -d '\r')
    sync_gave_up() { [[ "$sync_rc" == 75 ]] && box grep -q "ferryd (pid $ferryd_pid) is syncing this store.*nothing was done" /root/race-sync.out; }
    check "... and exits 75 at its 60 s bound, having done nothing (exit $sync_rc after about ${waited}s)" sync_gave_up
    check "... about 60 s after it began waiting (${waited}s)" test "$waited" -ge 58 -a "$waited" -le 75
    check "ferryd is still the one listing it" test "$(claim_of big)" = "$ferryd_pid ferryd"
    check "the server never served two listings of the store at once" test "$(stat_of '["listing_at_once"].get("Big")')" = 1
    check "ferryd's pass stores all 4000" wait_until 120 rows_are big 4000

    pushes_ok=1; cli_pushed=0
    for round in 1 2 3 4 5; do
        box runuser -u ferry -- sqlite3 "$DB" "INSERT INTO notes(body) VALUES ('{\"text\":\"r$round-1\"}'), ('{\"text\":\"r$round-2\"}'), ('{\"text\":\"r$round-3\"}')"
        out=$(box ferry push notes 2>&1); rc=$?
        n=$(grep -o 'store notes: pushed [0-9]*' <<<"$out" | grep -o '[0-9]*$' | head -1)
        cli_pushed=$((cli_pushed + ${n:-0}))
        echo "round $round: ferry push exit $rc, pushed ${n:-0}"
        [[ $rc -eq 0 || $rc -eq 75 ]] || { pushes_ok=0; echo "$out"; }
    done
    check "ferry push beside ferryd exits 0 (or 75 naming it) each round" test "$pushes_ok" = 1
    note_count() { curl -sS -f "$base/__admin/dump?class=Note" | python3 -c 'import json, sys; o = json.load(sys.stdin)["objects"]; print(len(o), len({x["text"] for x in o}))'; }
    check "15 creates made 15 objects, none twice ($(note_count))" test "$(note_count)" = "15 15"
    replica_matches() { rows_are notes 15 && [[ "$(box sqlite3 "$DB" "SELECT count(*) FROM ferry_pending_writes" | tr -d '\r')" == 0 ]]; }
    check "the replica holds 15 rows for the 15 objects, nothing left to push" wait_until 30 replica_matches
    ferryd_pushed=$(box journalctl -u ferryd FERRY_STORE=notes MESSAGE_ID=$ID_PASS_FINISHED --no-pager -o cat | grep -o 'store notes: pushed [0-9]*' | grep -o '[0-9]*$' | paste -sd+ | bc)
    check "each create pushed once: ferry push ${cli_pushed} + ferryd ${ferryd_pushed:-0} = 15" test "$((cli_pushed + ${ferryd_pushed:-0}))" = 15
    check "the server never served two listings of the push store at once" test "$(stat_of '["listing_at_once"].get("Note", 1)')" = 1
    admin fault '{"clear":true}'
fi

# --- stop --------------------------------------------------------------------------------------
check "systemctl stop ferryd" box systemctl stop ferryd
check "ferryd inactive" test "$(show ActiveState)" = inactive
# Before any other connection: the last one to close removes the WAL files unless it is
# ferryd's (which keeps them), and a reader cannot create them in a directory it may not write.
check_real "the group still reads the replica once ferryd stopped (its WAL files are kept)" reader_counts
check "clean exit (Result=success, status 0)" test "$(show Result)" = success -a "$(show ExecMainStatus)" = 0
check "PRAGMA integrity_check ok" test "$(box sqlite3 "$DB" 'PRAGMA integrity_check' | tr -d '\r')" = ok
check "rows still there after stop" rows_are quotes 300

finish
