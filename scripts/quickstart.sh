#!/usr/bin/env bash
# Ferry quick start on a fresh Debian 12 machine with Swift installed:
# build dependencies (apt), a release build, then a one-shot sync of the bundled demo store
# (etc/ferry/demo, read through file: URLs, so it works offline) into ./run/demo.db.
#
#   bash scripts/quickstart.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/apt-deps.sh

if ! command -v swift >/dev/null; then
    echo "error: swift not found: install Swift 6 (https://www.swift.org/install/linux/) and run this again" >&2
    exit 1
fi

echo "== apt build dependencies"
ensure_apt_packages libcurl4-openssl-dev libsqlite3-dev libssl-dev libsystemd-dev libical-dev sqlite3 pkg-config

# Only the two programs a person runs: the benchmark, fuzz and torture executables are for
# the tests, and building them too costs minutes.
echo "== swift build -c release (ferry, ferryd)"
swift build -c release --product ferry
swift build -c release --product ferryd

echo "== ferry sync (demo store, default configuration)"
mkdir -p run
.build/release/ferry sync --config etc/ferry/ferry.conf --database ./run/demo.db

echo "== the replica"
echo '$ sqlite3 ./run/demo.db "select count(*) from demo"'
sqlite3 ./run/demo.db "select count(*) from demo"
echo '$ sqlite3 -header -column ./run/demo.db "select author, count(*) as quotes from demo group by author order by quotes desc limit 5"'
sqlite3 -header -column ./run/demo.db "select author, count(*) as quotes from demo group by author order by quotes desc limit 5"
echo
echo "Done. Next:"
echo "  .build/release/ferry status --config etc/ferry/ferry.conf --database ./run/demo.db"
echo "  sqlite3 ./run/demo.db '.schema demo'"
echo "  README.md, 'Install as a service', to run ferryd under systemd"
