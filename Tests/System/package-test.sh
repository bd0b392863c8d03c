#!/bin/bash
# The Debian package under a real systemd: lintian, then install, enable, upgrade, remove and
# purge in a throwaway box (run by scripts/test.sh; needs root).
#
#   Tests/System/package-test.sh ../ferry_0.3.0-1_amd64.deb
#
# Checks, as an admin would see them: lintian reports no error; installing creates the user
# and group ferry and the units, and starts nothing (the shipped configuration syncs only the
# bundled demo: a person configures stores first); `systemctl enable --now ferryd` syncs the
# demo into /var/lib/ferry/ferry.db; an upgrade to a newer build (the same package with a
# higher version) keeps the admin's changed ferry.conf (dpkg's conffile question answered by
# policy: keep it) and the replica, and restarts the running daemon once; remove stops it and
# keeps the replica, the configuration and the user; purge removes them. The last line is
# "N passed, N failed"; exit 1 on any failure.
set -uo pipefail

root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
SDBOX=${SDBOX:-$root/../shared/tools/sdbox/sdbox}
export SDBOX_NAME=${SDBOX_NAME:-ferry-pkgtest}
DEB=${1:?usage: $0 PATH/TO/ferry_VERSION_ARCH.deb}
DB=/var/lib/ferry/ferry.db

source "$root/Tests/System/checks.sh"
finish() {
    echo "$passed passed, $failed failed"
    [[ $failed -eq 0 ]]
    exit $?
}

work=$(mktemp -d)
box_up=0
cleanup() {
    if [[ $box_up -eq 1 ]]; then
        if [[ $failed -gt 0 ]]; then box journalctl -u ferryd --no-pager -n 40 2>/dev/null || true; fi
        "$SDBOX" down >/dev/null 2>&1 || echo "warning: sdbox down failed"
    fi
    rm -rf "$work"
}
trap cleanup EXIT

[[ $(id -u) -eq 0 ]] || { fail "must run as root (sdbox boots systemd)"; finish; }
[[ -x "$SDBOX" ]] || { fail "sdbox not found at $SDBOX"; finish; }
[[ -f "$DEB" ]] || { fail "no package at $DEB"; finish; }

# --- lintian --------------------------------------------------------------------------------
lintian_clean() {
    local out
    out=$(lintian --fail-on error --suppress-tags-from-file /dev/null "$DEB" 2>&1); local rc=$?
    [[ -n "$out" ]] && echo "$out" | head -20
    [[ $rc -eq 0 ]]
}
check "lintian: no errors ($(basename "$DEB"))" lintian_clean
depends_on_debian_only() {
    local depends
    depends=$(dpkg-deb -f "$DEB" Depends)
    echo "Depends: $depends"
    ! grep -qi swift <<<"$depends" && grep -q libcurl4 <<<"$depends" && grep -q libsqlite3-0 <<<"$depends"
}
check "depends on Debian's libraries only" depends_on_debian_only

# --- a newer build: the same package, version +1 ---------------------------------------------
version=$(dpkg-deb -f "$DEB" Version)
newer_version="${version%-*}-$(( ${version##*-} + 1 ))"
dpkg-deb -R "$DEB" "$work/newer" && sed -i "s/^Version: .*/Version: $newer_version/" "$work/newer/DEBIAN/control" \
    && dpkg-deb -b "$work/newer" "$work/ferry_newer.deb" >/dev/null
check "a newer build $newer_version made" test -f "$work/ferry_newer.deb"
cp "$DEB" "$work/ferry.deb"

# --- the box --------------------------------------------------------------------------------
check "sdbox up" "$SDBOX" up
box_up=1
# The box is an overlay of this machine: a policy-rc.d here (CI's, which keeps packages from
# starting services on the host) would stop dpkg from restarting ferryd in the box too.
box rm -f /usr/sbin/policy-rc.d
"$SDBOX" cp "$work/ferry.deb" /root/ferry.deb >/dev/null
"$SDBOX" cp "$work/ferry_newer.deb" /root/ferry_newer.deb >/dev/null
show() { box systemctl show -P "$1" ferryd | tr -d '\r'; }

check "dpkg -i installs" box dpkg -i /root/ferry.deb
check "user and group ferry exist" box sh -c 'getent passwd ferry >/dev/null && getent group ferry >/dev/null'
check "units installed (ferryd.service, ferryd@.service)" box sh -c 'test -f /usr/lib/systemd/system/ferryd.service && test -f /usr/lib/systemd/system/ferryd@.service'
check "the unit runs /usr/bin/ferryd" box grep -q '^ExecStart=/usr/bin/ferryd' /usr/lib/systemd/system/ferryd.service
check "installing started nothing" test "$(show ActiveState)" = inactive
check "installing enabled nothing" test "$(box systemctl is-enabled ferryd | tr -d '\r')" = disabled
check "ferry.conf is a conffile" box sh -c "dpkg-query -W -f='\${Conffiles}' ferry | grep -q /etc/ferry/ferry.conf"
check "man pages and completion installed" box sh -c 'test -f /usr/share/man/man1/ferry.1.gz && test -f /usr/share/man/man5/ferry.conf.5.gz && test -f /usr/share/bash-completion/completions/ferry'
check "ferry check-config accepts the shipped file" box ferry check-config

check "systemctl enable --now ferryd" box systemctl enable --now ferryd
rows() { box sqlite3 "$DB" "SELECT count(*) FROM demo" 2>/dev/null | tr -d '\r'; }
demo_synced() { [[ "$(rows)" == 1000 ]]; }
check "the demo store syncs 1000 rows into $DB" wait_until 60 demo_synced

# The admin changes the configuration; the package's version of the file stays the same.
box sh -c 'printf "\n# changed by the admin\n" >> /etc/ferry/ferry.conf'
pid_before=$(show MainPID)
check "upgrade to $newer_version (conffile kept by policy)" box env DEBIAN_FRONTEND=noninteractive dpkg -i --force-confold /root/ferry_newer.deb
check "the admin's ferry.conf is kept" box grep -q "changed by the admin" /etc/ferry/ferry.conf
check "the daemon runs after the upgrade" wait_until 20 test "$(show ActiveState)" = active
check "restarted once (new main process)" test "$(show MainPID)" != "$pid_before"
check "restarted once (not by a failure: NRestarts 0)" test "$(show NRestarts)" = 0
check "the replica is kept (1000 rows)" demo_synced
check "ferry --version is the package's version" test "$(box ferry --version | tr -d '\r')" = "${version%-*}"

check "dpkg -r ferry" box dpkg -r ferry
check "remove stopped the daemon" test "$(show ActiveState)" != active
check "remove keeps the replica" box test -f "$DB"
check "remove keeps the user ferry" box getent passwd ferry
check "remove keeps /etc/ferry/ferry.conf" box test -f /etc/ferry/ferry.conf
check "the binaries are gone" box sh -c '! test -e /usr/bin/ferryd'

check "dpkg -P ferry" box dpkg -P ferry
check "purge removes /var/lib/ferry" box sh -c '! test -e /var/lib/ferry'
check "purge removes /etc/ferry/ferry.conf" box sh -c '! test -e /etc/ferry/ferry.conf'
check "purge removes the user and group ferry" box sh -c '! getent passwd ferry && ! getent group ferry'

finish
