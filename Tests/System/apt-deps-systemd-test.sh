#!/usr/bin/env bash
# scripts/apt-deps.sh against a real systemd and a real Debian package: in a throwaway box
# (sdbox, whose writes vanish at `down`), on the host's network so apt reaches its mirrors.
# The stub test (apt-deps-test.sh) checks the script's logic anywhere; this one checks its
# promise where it matters, with a running manager, dpkg, debhelper's maintainer scripts and
# deb-systemd-helper's state as Debian ships them.
#
#   bash Tests/System/apt-deps-systemd-test.sh      (root; scripts/test.sh runs it)
#
# The package is memcached: small, a service that starts at once, in the test servers' list.
# First the premise, on a box without a policy-rc.d as a plain Debian machine has none: a
# plain `apt-get install` starts memcached and enables it at boot. Then ensure_apt_packages
# installs it again from nothing: it is neither running nor enabled (systemctl, the links,
# and after a daemon-reload), no policy-rc.d is left behind, a unit the admin enabled is still
# enabled, and an admin's own policy-rc.d is left byte for byte. Exit 0 when every check
# holds, 1 when one fails, 2 when apt cannot reach its mirrors (the caller reports a skip,
# or a failure in CI).
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
SDBOX=${SDBOX:-$root/../shared/tools/sdbox/sdbox}
export SDBOX_NAME=${SDBOX_NAME:-ferry-aptdeps} SDBOX_NETWORK=host
PKG=memcached UNIT=memcached.service

source "$root/Tests/System/checks.sh"
finish() {
    echo "$passed passed, $failed failed"
    [[ $failed -eq 0 ]]
    exit $?
}
[[ $(id -u) -eq 0 ]] || { fail "must run as root (sdbox boots systemd)"; finish; }
[[ -x "$SDBOX" ]] || { fail "sdbox not found at $SDBOX"; finish; }
"$SDBOX" up >/dev/null || { fail "sdbox up"; finish; }
trap '"$SDBOX" down >/dev/null 2>&1 || echo "warning: sdbox down failed"' EXIT
# The box has a /tmp of its own, so a checkout under /tmp (a CI clone) is not there: the script
# under test goes in by copy.
"$SDBOX" cp "$root/scripts/apt-deps.sh" /root/apt-deps.sh >/dev/null || { fail "sdbox cp scripts/apt-deps.sh"; finish; }

quiet_apt() { box env DEBIAN_FRONTEND=noninteractive apt-get "$@" -y -qq >/dev/null 2>&1; }
purge() { quiet_apt purge "$PKG" && ! box dpkg-query -W -f='${Status}' "$PKG" 2>/dev/null | grep -q 'ok installed'; }
enabled() { [[ $(box systemctl is-enabled "$1" 2>/dev/null) == enabled ]]; }
running() { box systemctl is-active --quiet "$1"; }
linked() { box find /etc/systemd/system -path '*.wants/*' -name "$1" | grep -q .; }

# A plain Debian machine has no policy-rc.d (container images often do: Docker's refuses every
# start, which would make the premise below untrue here and the check pass for nothing).
box rm -f /usr/sbin/policy-rc.d
if ! quiet_apt update; then
    echo "apt-get update failed in the box: the mirrors are out of reach"
    exit 2
fi
check "the box starts clean: $PKG not installed" purge

# The premise: installed the plain way, the package starts its service and enables it.
quiet_apt install --no-install-recommends "$PKG" || fail "plain apt-get install $PKG"
check "premise: a plain install starts $UNIT" running "$UNIT"
check "premise: a plain install enables $UNIT at boot" enabled "$UNIT"
check "purged again" purge
box systemctl reset-failed "$UNIT" >/dev/null 2>&1

# An admin's unit, enabled before: left enabled.
box sh -c 'printf "[Service]\nType=oneshot\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n" > /etc/systemd/system/admins.service'
box systemctl enable --quiet admins.service
check "premise: the admin's admins.service is enabled" enabled admins.service
out=$(box bash -c "source /root/apt-deps.sh && ensure_apt_packages $PKG" 2>&1); rc=$?
echo "$out" | sed 's/^/  | /'
check "ensure_apt_packages $PKG succeeds" test "$rc" -eq 0
check "$PKG is installed" eval 'box dpkg-query -W "$PKG" >/dev/null'
check "$UNIT is not running" eval '! running "$UNIT"'
check "no memcached process" eval '! box pgrep -x memcached >/dev/null'
check "$UNIT is not enabled (systemctl is-enabled)" eval '! enabled "$UNIT"'
check "$UNIT has no .wants link" eval '! linked "$UNIT"'
box systemctl daemon-reload
check "$UNIT is still not enabled after a daemon-reload" eval '! enabled "$UNIT"'
check "what it said matches: left disabled: $UNIT" grep -qF "left disabled: $UNIT" <<<"$out"
check "no policy-rc.d left behind" box test ! -e /usr/sbin/policy-rc.d
check "the admin's admins.service is still enabled" enabled admins.service

# An admin's own policy-rc.d is theirs: used as it is, never replaced nor removed.
purge
box sh -c 'printf "#!/bin/sh\n# the admin\x27s\nexit 101\n" > /usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d'
before=$(box sha256sum /usr/sbin/policy-rc.d)
box bash -c "source /root/apt-deps.sh && ensure_apt_packages $PKG" >/dev/null 2>&1
check "an admin's policy-rc.d is left as it was" test "$(box sha256sum /usr/sbin/policy-rc.d)" = "$before"
check "and $UNIT is still not running" eval '! running "$UNIT"'
finish
