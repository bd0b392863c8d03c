#!/bin/bash
# The Debian package under a real systemd: lintian, then install, enable, upgrade, remove and
# purge in a throwaway box (run by scripts/test.sh; needs root).
#
#   Tests/System/package-test.sh ../ferry_0.3.0-1_amd64.deb
#
# Checks, as an admin would see them: lintian reports no error and no warning; the man pages
# have one section per subcommand `ferry --help` lists, once each, and the exit statuses the
# programs' help lists, and groff and man render them without a warning; installing creates the
# user and group ferry, the units and the bash, zsh and fish completions, and starts nothing
# (the shipped configuration syncs only the bundled demo: a person configures stores first);
# `systemctl enable --now ferryd` syncs the demo into /var/lib/ferry/ferry.db, and an instance
# ferryd@demo2 (/etc/ferry/demo2.conf) into /var/lib/ferry/demo2/ferry.db; an upgrade to a
# newer build (this package with a higher version and a changed ferry.conf) keeps the admin's
# changed ferry.conf, leaving the new one as ferry.conf.dpkg-dist, keeps the replicas, and
# restarts the daemon and the instance exactly once each (one start each in the journal);
# remove stops both (no ferryd process left) and keeps the replicas, the configuration and the
# user; purge removes them without a warning; a purge that cannot delete the user (a process
# still runs as ferry) says so. The last line is "N passed, N failed"; exit 1 on any failure.
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
        if [[ $failed -gt 0 ]]; then box journalctl -u ferryd -u 'ferryd@*' --no-pager -n 40 2>/dev/null || true; fi
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
    out=$(lintian --fail-on error,warning --suppress-tags-from-file /dev/null "$DEB" 2>&1); local rc=$?
    [[ -n "$out" ]] && echo "$out" | head -20
    [[ $rc -eq 0 ]]
}
check "lintian: no errors, no warnings ($(basename "$DEB"))" lintian_clean
depends_on_debian_only() {
    local depends
    depends=$(dpkg-deb -f "$DEB" Depends)
    echo "Depends: $depends"
    ! grep -qi swift <<<"$depends" && grep -q libcurl4 <<<"$depends" && grep -q libsqlite3-0 <<<"$depends"
}
check "depends on Debian's libraries only" depends_on_debian_only

# --- the man pages, as the package ships them, against the packaged programs' help ------------
dpkg-deb -x "$DEB" "$work/pkg"
man_dir="$work/pkg/usr/share/man"
# The entries of the SUBCOMMANDS list of `ferry --help`: a name at the list's two-space indent
# (wrapped descriptions are indented further), not "help" nor the closing "See 'ferry help ...'".
help_subcommands() {
    "$work/pkg/usr/bin/ferry" --help | sed -n '/^SUBCOMMANDS:/,/^[A-Z]/p' \
        | sed -n 's/^  \([a-z][a-z0-9-]*\).*/\1/p' | grep -vx help
}
page_subcommands() { zcat "$man_dir/man1/ferry.1.gz" | sed -n 's/^\.SH "FERRY \(.*\)"$/\1/p' | tr 'A-Z' 'a-z'; }
subcommands_once_each() {
    local listed paged
    listed=$(help_subcommands); paged=$(page_subcommands)
    echo "ferry --help: $(echo $listed)"; echo "ferry(1):     $(echo $paged)"
    [[ -n "$listed" && "$listed" == "$paged" ]]
}
check "ferry(1): one section per subcommand of ferry --help, once each, in its order" subcommands_once_each
# The exit statuses a program's help lists ("Exit statuses: 0 ...; 64 ..." or "Exit codes: 0 ...,
# 1 ..."), against the .TP entries of the page's EXIT STATUS section.
help_statuses() {
    "$work/pkg/usr/bin/$1" --help | tr '\n' ' ' | grep -o 'Exit [a-z]*: [^.]*\(([^)]*)[^.]*\)*' \
        | grep -oE '(: |[;,] )[0-9]+ ' | tr -dc '0-9\n '
}
page_statuses() { zcat "$man_dir/man1/$1.1.gz" | sed -n '/^\.SH "EXIT STATUS"/,/^\.SH/s/^\.B \([0-9]*\)$/\1/p'; }
exit_status_section() {
    local listed paged
    listed=$(echo $(help_statuses "$1")); paged=$(echo $(page_statuses "$1"))
    echo "$1 --help: $listed; $1($2): $paged"
    [[ -n "$listed" && "$listed" == "$paged" ]]
}
check "ferryd(1): EXIT STATUS lists the exit statuses of ferryd --help" exit_status_section ferryd 1
check "ferry(1): EXIT STATUS lists the exit codes of ferry --help" exit_status_section ferry 1
# lintian's own man check is man --warnings; groff -ww turns on every groff warning as well.
pages_render_cleanly() {
    local page out rc=0
    for page in man1/ferry.1.gz man1/ferryd.1.gz man5/ferry.conf.5.gz; do
        out=$(zcat "$man_dir/$page" | LC_ALL=C.UTF-8 groff -man -Tutf8 -ww -z 2>&1;
              LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$man_dir/$page" 2>&1 >/dev/null)
        [[ -z "$out" ]] || { echo "$page:"; echo "$out" | head -10; rc=1; }
    done
    return $rc
}
check "the man pages render without warnings (groff -ww, man --warnings)" pages_render_cleanly

# --- a newer build: this package, version +1, whose ferry.conf changed -----------------------
# The shipped ferry.conf gains a line, so an upgrade meets a conffile both sides changed.
version=$(dpkg-deb -f "$DEB" Version)
newer_version="${version%-*}-$(( ${version##*-} + 1 ))"
dpkg-deb -R "$DEB" "$work/newer" && sed -i "s/^Version: .*/Version: $newer_version/" "$work/newer/DEBIAN/control" \
    && printf '\n# changed in %s\n' "$newer_version" >> "$work/newer/etc/ferry/ferry.conf" \
    && dpkg-deb -b "$work/newer" "$work/ferry_newer.deb" >/dev/null
check "a newer build $newer_version made, with a changed ferry.conf" test -f "$work/ferry_newer.deb"
cp "$DEB" "$work/ferry.deb"

# --- the box --------------------------------------------------------------------------------
check "sdbox up" "$SDBOX" up
box_up=1
# The box is an overlay of this machine: a policy-rc.d here (CI's, which keeps packages from
# starting services on the host) would stop dpkg from restarting ferryd in the box too.
box rm -f /usr/sbin/policy-rc.d
"$SDBOX" cp "$work/ferry.deb" /root/ferry.deb >/dev/null
"$SDBOX" cp "$work/ferry_newer.deb" /root/ferry_newer.deb >/dev/null
show() { box systemctl show -P "$1" "${2:-ferryd}" | tr -d '\r'; }
is_active() { [[ "$(show ActiveState "$1")" == active ]]; }
# How many times systemd started UNIT, from its "Started UNIT" journal entries (the unit-started
# message); InvocationID changes at every start too.
STARTED=39f53479d3a045ac8e11786248231fbf
starts() { box journalctl --no-pager -q -o cat _PID=1 UNIT="$1" MESSAGE_ID=$STARTED | tr -d '\r' | grep -c .; }
no_ferryd_process() { ! box pgrep -x ferryd >/dev/null; }

check "dpkg -i installs" box dpkg -i /root/ferry.deb
check "user and group ferry exist" box sh -c 'getent passwd ferry >/dev/null && getent group ferry >/dev/null'
check "units installed (ferryd.service, ferryd@.service)" box sh -c 'test -f /usr/lib/systemd/system/ferryd.service && test -f /usr/lib/systemd/system/ferryd@.service'
check "the units run /usr/bin/ferryd" box sh -c 'grep -q "^ExecStart=/usr/bin/ferryd " /usr/lib/systemd/system/ferryd.service && grep -q "^ExecStart=/usr/bin/ferryd " /usr/lib/systemd/system/ferryd@.service'
check "installing started nothing" test "$(show ActiveState)" = inactive
check "installing enabled nothing" test "$(box systemctl is-enabled ferryd | tr -d '\r')" = disabled
check "ferry.conf is a conffile" box sh -c "dpkg-query -W -f='\${Conffiles}' ferry | grep -q /etc/ferry/ferry.conf"
check "man pages installed" box sh -c 'test -f /usr/share/man/man1/ferry.1.gz && test -f /usr/share/man/man1/ferryd.1.gz && test -f /usr/share/man/man5/ferry.conf.5.gz'
check "completions installed (bash, zsh, fish)" box sh -c 'test -s /usr/share/bash-completion/completions/ferry && test -s /usr/share/zsh/vendor-completions/_ferry && test -s /usr/share/fish/vendor_completions.d/ferry.fish'
check "the API examples installed (/usr/share/doc/ferry/examples)" box sh -c 'ls /usr/share/doc/ferry/examples/stripe.conf* /usr/share/doc/ferry/examples/github-issues.conf* >/dev/null'
check "ferry check-config accepts the shipped file" box ferry check-config

# An instance, as ferryd@.service expects it: its configuration /etc/ferry/NAME.conf (here the
# shipped one: the demo's pages are found beside it), its replica in /var/lib/ferry/NAME/.
box cp /etc/ferry/ferry.conf /etc/ferry/demo2.conf
check "systemctl enable --now ferryd" box systemctl enable --now ferryd
check "systemctl enable --now ferryd@demo2" box systemctl enable --now ferryd@demo2
rows() { box sqlite3 "$1" "SELECT count(*) FROM demo" 2>/dev/null | tr -d '\r'; }
demo_synced() { [[ "$(rows "$DB")" == 1000 ]]; }
instance_synced() { [[ "$(rows /var/lib/ferry/demo2/ferry.db)" == 1000 ]]; }
check "the demo store syncs 1000 rows into $DB" wait_until 60 demo_synced
check "the instance syncs 1000 rows into /var/lib/ferry/demo2/ferry.db" wait_until 60 instance_synced

# The admin changes the configuration, and so does the newer build: dpkg's conffile question.
# Answered by policy, as unattended upgrades do (--force-confdef --force-confold, no terminal):
# the admin's file stays, the package's new one lands beside it as ferry.conf.dpkg-dist.
box sh -c 'printf "\n# changed by the admin\n" >> /etc/ferry/ferry.conf'
starts_before=$(starts ferryd.service); instance_starts_before=$(starts ferryd@demo2.service)
invocation_before=$(show InvocationID); instance_invocation_before=$(show InvocationID ferryd@demo2)
echo "starts before the upgrade: ferryd $starts_before, ferryd@demo2 $instance_starts_before"
check "upgrade to $newer_version (conffile question answered by policy)" \
    box env DEBIAN_FRONTEND=noninteractive dpkg -i --force-confdef --force-confold /root/ferry_newer.deb </dev/null
check "the admin's ferry.conf is kept" box sh -c 'grep -q "changed by the admin" /etc/ferry/ferry.conf && ! grep -q "changed in" /etc/ferry/ferry.conf'
check "the package's new ferry.conf is left as ferry.conf.dpkg-dist" box grep -q "changed in $newer_version" /etc/ferry/ferry.conf.dpkg-dist
check "the daemon runs after the upgrade" wait_until 20 is_active ferryd
check "the instance runs after the upgrade" wait_until 20 is_active ferryd@demo2
started_at_least() { [[ $(starts "$1") -ge $2 ]]; }
started_once() {  # UNIT STARTS_BEFORE INVOCATION_BEFORE: one start in the journal, a new invocation
    local unit=$1 expected=$(( $2 + 1 )) count
    wait_until 10 started_at_least "$unit" "$expected"
    sleep 1; count=$(starts "$unit")
    echo "$unit: started $(( count - $2 )) time(s) by the upgrade, NRestarts $(show NRestarts "$unit")"
    [[ $count -eq $expected && "$(show InvocationID "$unit")" != "$3" && "$(show NRestarts "$unit")" == 0 ]]
}
check "the upgrade restarted the daemon exactly once" started_once ferryd.service "$starts_before" "$invocation_before"
check "the upgrade restarted the instance exactly once" started_once ferryd@demo2.service "$instance_starts_before" "$instance_invocation_before"
replicas_kept() { demo_synced && instance_synced; }
check "the replicas are kept (1000 rows each)" replicas_kept
check "ferry --version is the package's version" test "$(box ferry --version | tr -d '\r')" = "${version%-*}"

# An admin who stopped the daemon (still enabled) keeps it stopped through an upgrade: the
# package restarts only what runs (try-restart), as README and the postinst say.
check "systemctl stop ferryd (left enabled)" box systemctl stop ferryd
check "reinstall $newer_version while ferryd is stopped" \
    box env DEBIAN_FRONTEND=noninteractive dpkg -i --force-confdef --force-confold /root/ferry_newer.deb </dev/null
sleep 2
check "an upgrade leaves a stopped ferryd stopped" test "$(show ActiveState)" = inactive
check "... and still restarts the running instance" wait_until 20 is_active ferryd@demo2
check "systemctl start ferryd" box systemctl start ferryd
check "the daemon runs again" wait_until 20 is_active ferryd

check "dpkg -r ferry" box dpkg -r ferry
check "remove stopped the daemon" test "$(show ActiveState)" != active
check "remove stopped the instance" test "$(show ActiveState ferryd@demo2)" != active
check "no ferryd process is left" wait_until 5 no_ferryd_process
check "remove keeps the replicas" box test -f "$DB" -a -f /var/lib/ferry/demo2/ferry.db
check "remove keeps the user ferry" box getent passwd ferry
check "remove keeps /etc/ferry/ferry.conf" box test -f /etc/ferry/ferry.conf
check "the binaries are gone" box sh -c '! test -e /usr/bin/ferryd'

# The admin's /etc/ferry/demo2.conf is no conffile: dpkg notes that /etc/ferry is not empty
# when it drops the conffiles, and postrm then removes the directory (README: purge removes
# /etc/ferry). That note is dpkg's; the package itself must say nothing.
purge_quietly() {  # dpkg -P succeeds and the package's postrm warns of nothing
    local out rc
    out=$(box dpkg -P ferry 2>&1); rc=$?
    echo "$out" | tr -d '\r' | grep -v '^(Reading database' | sed 's/^/  /'
    [[ $rc -eq 0 ]] && ! grep -q 'ferry: warning' <<<"$out"
}
check "dpkg -P ferry (no warning from the package)" purge_quietly
check "purge removes /var/lib/ferry" box sh -c '! test -e /var/lib/ferry'
check "purge removes /etc/ferry/ferry.conf and ferry.conf.dpkg-dist" box sh -c '! test -e /etc/ferry/ferry.conf && ! test -e /etc/ferry/ferry.conf.dpkg-dist'
check "purge removes the user and group ferry" box sh -c '! getent passwd ferry && ! getent group ferry'
check "purge removes /etc/ferry, the instance's demo2.conf with it" box sh -c '! test -e /etc/ferry'
check "purge removes the link that enabled ferryd@demo2" box sh -c '! find /etc/systemd/system -name "ferryd@*" | grep -q .'

# A user that cannot be deleted (a process of the admin's still runs as ferry) is reported.
box dpkg -i /root/ferry.deb >/dev/null
box systemd-run --quiet --unit=held-by-ferry --uid=ferry --gid=ferry sleep 300
purge_reports_user() {
    local out
    out=$(box dpkg -P ferry 2>&1 | tr -d '\r')
    echo "$out" | grep 'ferry: warning' | sed 's/^/  /'
    grep -q 'ferry: warning: could not delete the user ferry' <<<"$out" && box getent passwd ferry >/dev/null
}
check "a purge that cannot delete the user ferry says so" purge_reports_user
box systemctl stop held-by-ferry
box userdel ferry >/dev/null 2>&1

finish
