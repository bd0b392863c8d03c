#!/usr/bin/env bash
# scripts/apt-deps.sh installs the test servers' daemon packages without starting or enabling
# their services, and leaves the machine's own services as they were. Checked against stub
# commands (dpkg-query, apt-get, systemctl, deb-systemd-helper) and a scratch systemd
# directory, so it runs anywhere, as any user, and installs nothing.
#
#   bash Tests/System/apt-deps-test.sh
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
check() {
    local what=$1; shift
    if "$@"; then passed=$((passed + 1)); echo "ok: $what"; else failed=$((failed + 1)); echo "FAILED: $what"; fi
}

mkdir -p "$work/bin" "$work/systemd/multi-user.target.wants"
export FERRY_POLICY_RC_D="$work/policy-rc.d" FERRY_SYSTEMD_DIR="$work/systemd"
# A service the admin enabled before: never touched.
ln -s /dev/null "$work/systemd/multi-user.target.wants/admins.service"

# dpkg-query: nothing is installed.
printf '#!/bin/sh\nexit 1\n' > "$work/bin/dpkg-query"
# apt-get install: as a daemon package's postinst does, ask invoke-rc.d's policy whether the
# service may start (and start it only if so), and enable it at boot.
cat > "$work/bin/apt-get" <<STUB
#!/bin/sh
[ "\$2" = update ] || [ "\$1" = update ] && exit 0
for last; do :; done
if [ -x "$FERRY_POLICY_RC_D" ]; then "$FERRY_POLICY_RC_D" "\$last" start; echo "policy \$?" >> "$work/log"; else echo "policy none" >> "$work/log"; fi
ln -sf /dev/null "$work/systemd/multi-user.target.wants/\$last.service"
exit 0
STUB
# systemctl disable UNIT: what a disable does to the symlinks; is-enabled reads them.
# deb-systemd-helper as Debian's: it refuses to run outside a maintainer script.
cat > "$work/bin/systemctl" <<STUB
#!/bin/sh
for last; do :; done
echo "systemctl \$*" >> "$work/log"
case "\$1" in
    is-enabled) if [ -e "$work/systemd/multi-user.target.wants/\$last" ]; then echo enabled; else echo disabled; exit 1; fi ;;
    disable) [ -e "$work/systemctl-broken" ] && exit 1; rm -f "$work/systemd/multi-user.target.wants/\$last" ;;
esac
STUB
cat > "$work/bin/deb-systemd-helper" <<STUB
#!/bin/sh
echo "/usr/bin/deb-systemd-helper was not called from dpkg. Exiting." >&2
exit 1
STUB
# sudo (used when not root): the stubs need no privilege.
printf '#!/bin/sh\nexec "$@"\n' > "$work/bin/sudo"
chmod +x "$work/bin/"*

run() { PATH="$work/bin:$PATH" bash -c 'source "$1"; ensure_apt_packages "$2"' _ "$root/scripts/apt-deps.sh" "$1"; }

out=$(run stubd 2>&1)
echo "$out" | sed 's/^/  | /'
check "the install asked the policy and was refused a start (101)" grep -qx "policy 101" "$work/log"
check "the temporary policy-rc.d is gone after the install" test ! -e "$FERRY_POLICY_RC_D"
check "the unit the install enabled is disabled again" test ! -e "$work/systemd/multi-user.target.wants/stubd.service"
check "it says which unit it left disabled" grep -q "left disabled: stubd.service" <<< "$out"
check "it says what it installs" grep -q "installing: stubd" <<< "$out"
check "the admin's enabled service is untouched" test -L "$work/systemd/multi-user.target.wants/admins.service"
check "no disable of anything but the new unit" bash -c '! grep -v "stubd.service" "$1" | grep -q disable' _ "$work/log"

# A systemctl that cannot disable (no unit file it knows): the links the install made go anyway.
: > "$work/log"
touch "$work/systemctl-broken"
run brokend > /dev/null 2>&1
check "a unit systemctl could not disable loses its link all the same" test ! -e "$work/systemd/multi-user.target.wants/brokend.service"
rm -f "$work/systemctl-broken"
# A unit that stays enabled whatever is done (a link in a directory the script cannot write):
# an error naming it, and a failed install step, never "left disabled".
cat > "$work/bin/find" <<STUB
#!/bin/sh
case "\$*" in *-delete*) exit 1 ;; esac
exec /usr/bin/find "\$@"
STUB
chmod +x "$work/bin/find"
touch "$work/systemctl-broken"
out=$(run stuckd 2>&1); code=$?
rm -f "$work/systemctl-broken" "$work/bin/find"
check "a unit left enabled is an error naming it" grep -q "could not disable stuckd.service" <<< "$out"
check "... and the install step fails" test "$code" -ne 0
check "... and it is not said to be disabled" bash -c '! grep -q "left disabled: stuckd" <<< "$1"' _ "$out"

# A machine with its own policy-rc.d: the admin's policy decides, and stays as it was.
: > "$work/log"
printf '#!/bin/sh\n# the admin'"'"'s\nexit 0\n' > "$FERRY_POLICY_RC_D"
chmod +x "$FERRY_POLICY_RC_D"
before=$(sha256sum "$FERRY_POLICY_RC_D")
run otherd > /dev/null 2>&1
check "an existing policy-rc.d is asked, not replaced" grep -qx "policy 0" "$work/log"
check "an existing policy-rc.d is left as it was" test "$(sha256sum "$FERRY_POLICY_RC_D")" = "$before"
check "the unit that install enabled is still disabled again" test ! -e "$work/systemd/multi-user.target.wants/otherd.service"

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
