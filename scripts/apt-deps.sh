# Sourced by scripts/quickstart.sh and scripts/test.sh: install missing Debian packages.
#
#   ensure_apt_packages PKG...
#
# Installs only what dpkg does not already report installed (apt-get update first, once), with
# sudo when not root. Returns non-zero when the install fails.
#
# Several test servers come as daemon packages (nginx, prometheus, postgresql, apache2 with
# davical). Installed the plain way, Debian starts their services at once and enables them at
# every boot (Apache on port 80, Prometheus on 9090 to every interface). The tests run private
# instances of their own, so the install neither starts nor enables anything: a policy-rc.d
# that refuses every start is in place while apt runs (unless the machine has one already),
# and the services the install enabled are disabled again. A policy-rc.d the machine has is
# its admin's, and is left to decide. The machine's services stay as
# they were; what was installed is printed.

# FERRY_POLICY_RC_D and FERRY_SYSTEMD_DIR move the two system paths this touches, for
# Tests/System/apt-deps-test.sh, which runs it against stub commands.

# Units enabled at boot, as the symlinks in /etc/systemd/system say (readable without a
# running systemd, as in a container).
enabled_units() {
    find "${FERRY_SYSTEMD_DIR:-/etc/systemd/system}" -path '*.wants/*' -printf '%f\n' 2>/dev/null | sort -u
}

# UNIT is enabled at boot: a link in a .wants directory, or systemctl saying so.
still_enabled() {
    enabled_units | grep -qxF "$1" && return 0
    command -v systemctl >/dev/null && [[ $(systemctl is-enabled "$1" 2>/dev/null) == enabled ]]
}

ensure_apt_packages() {
    local missing=() pkg
    for pkg in "$@"; do
        if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
            missing+=("$pkg")
        fi
    done
    if [[ ${#missing[@]} -eq 0 ]]; then
        return 0
    fi
    local sudo=()
    if [[ $(id -u) -ne 0 ]]; then
        if ! command -v sudo >/dev/null; then
            echo "error: missing packages ${missing[*]} and no sudo; install them as root: apt-get install ${missing[*]}" >&2
            return 1
        fi
        sudo=(sudo)
    fi
    echo "installing: ${missing[*]} (their services are neither started nor enabled)"
    local policy=${FERRY_POLICY_RC_D:-/usr/sbin/policy-rc.d} placed=0 before status=0 unit
    if [[ ! -e $policy ]]; then
        "${sudo[@]}" sh -c "printf '#!/bin/sh\n# ferry scripts/apt-deps.sh: no service starts while its packages install\nexit 101\n' > $policy && chmod 755 $policy" && placed=1
    fi
    before=$(enabled_units)
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" || status=$?
    if [[ $placed -eq 1 ]]; then
        "${sudo[@]}" rm -f "$policy"
    fi
    # `systemctl disable` edits the links without a running manager (a container, a chroot);
    # deb-systemd-helper is no help here: it refuses to run outside a maintainer script. What
    # is said afterwards is read back from the links and `systemctl is-enabled`, never assumed.
    for unit in $(comm -13 <(echo "$before") <(enabled_units)); do
        "${sudo[@]}" systemctl disable --quiet "$unit" >/dev/null 2>&1 || true
        if still_enabled "$unit"; then
            "${sudo[@]}" find "${FERRY_SYSTEMD_DIR:-/etc/systemd/system}" -path '*.wants/*' -name "$unit" -delete 2>/dev/null || true
        fi
        if still_enabled "$unit"; then
            echo "error: could not disable $unit, which the install enabled; disable it yourself: systemctl disable $unit" >&2
            status=1
        else
            echo "left disabled: $unit (the tests run their own instance)"
        fi
    done
    return $status
}
