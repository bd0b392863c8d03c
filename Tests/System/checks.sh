# Shared by the system tests (sourced): PASS/FAIL counting, the box, waiting.
#   check NAME CMD...       PASS when CMD succeeds, FAIL otherwise
#   box CMD...              CMD inside the sdbox box ($SDBOX, $SDBOX_NAME)
#   wait_until SECONDS CMD  true once CMD succeeds, false after SECONDS
passed=0; failed=0
pass() { passed=$((passed + 1)); echo "PASS: $*"; }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }
check() { local name=$1; shift; if "$@"; then pass "$name"; else fail "$name"; fi; }
box() { "$SDBOX" exec "$@"; }
wait_until() {
    local limit=$(( $1 * 2 )); shift
    for ((i = 0; i < limit; i++)); do "$@" && return 0; sleep 0.5; done
    return 1
}
