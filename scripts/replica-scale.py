#!/usr/bin/env python3
"""What a large replica costs to open, query and sync when nothing changed.

    python3 scripts/replica-scale.py [--records 2000000] [--bin .build/release]

Builds a replica of --records rows (a Parse store synced once from Tests/Servers/parse_server.py,
then padded with ~330-byte rows through sqlite3, the way a big first sync would leave it), then
prints, each from a cold page cache when the script may drop it (root: /proc/sys/vm/drop_caches):

- `ferry status`: wall time, cold and warm;
- a `ferry sync` without changes: the pass's own time (from its log line) and the process's;
- ferryd: time from exec to its "ready" line, and to the end of its integrity check.

Figures, not assertions: compare runs of two builds on the same machine. Needs python3 and the
built `ferry` and `ferryd` (swift build -c release).
"""

import argparse
import os
import queue
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Tests", "Reliability"))
from daemon_harness import ParseServer, make_key_file, parse_store, write_config  # noqa: E402


def drop_caches():
    """True when the page cache could be dropped (root only)."""
    try:
        subprocess.run(["sync"], check=True)
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3")
        return True
    except OSError:
        return False


def timed(arguments, env=None):
    started = time.monotonic()
    result = subprocess.run(arguments, capture_output=True, text=True, env=env)
    return time.monotonic() - started, result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--bin", default=".build/release")
    a = parser.parse_args()
    ferry = os.path.abspath(os.path.join(a.bin, "ferry"))
    ferryd = os.path.abspath(os.path.join(a.bin, "ferryd"))
    work = tempfile.mkdtemp(prefix="ferry-replica-scale-")
    server = ParseServer()
    try:
        server.seed("Q", 10, size=200)
        key = make_key_file(work)
        database = os.path.join(work, "ferry.db")
        config = os.path.join(work, "ferry.conf")
        write_config(config, database, [parse_store("q", server.base, "Q", key, reconcile_interval="never")])
        subprocess.run([ferry, "sync", "--config", config], check=True, capture_output=True)

        # Padding rows as a merge would leave them: the guards go first (they refuse every writer
        # but Ferry), the stored count is cleared as a merge clears it, and Ferry's next pass puts
        # the guards back.
        connection = sqlite3.connect(database)
        for (trigger,) in connection.execute("SELECT name FROM sqlite_schema WHERE type = 'trigger'").fetchall():
            connection.execute('DROP TRIGGER "%s"' % trigger.replace('"', '""'))
        body = '{"text":"' + "x" * 300 + '"}'
        connection.execute("BEGIN")
        connection.executemany(
            "INSERT INTO q(id, version, body, first_seen, last_synced) VALUES (?, '2024-01-01T00:00:00.000Z', ?, 0, 0)",
            (("pad%08d" % i, body) for i in range(a.records)))
        connection.execute("UPDATE ferry_sync_state SET record_count = NULL")
        connection.execute("COMMIT")
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        connection.close()
        print("replica: %d rows, %d MB (%s)" % (a.records + 10, os.path.getsize(database) // 1_000_000, database))

        def sync(label):
            cold = drop_caches()
            seconds, result = timed([ferry, "sync", "--config", config, "--verbose"])
            line = next((l for l in reversed(result.stderr.splitlines()) if "pass finished" in l), result.stderr[-200:])
            pass_ms = re.search(r"duration_ms=(\d+)", line)
            print("%-32s process %.2f s%s, pass %s ms" % (label, seconds, " (cold)" if cold else "",
                                                        pass_ms.group(1) if pass_ms else "?"))

        sync("ferry sync after the padding:")
        sync("ferry sync, nothing changed:")
        for label in ("cold", "warm"):
            cold = drop_caches() if label == "cold" else False
            seconds, result = timed([ferry, "status", "--config", config])
            print("ferry status %-5s %.2f s%s (exit %d)" % (label + ":", seconds, "" if cold or label == "warm" else " (cache not dropped: not root)",
                                                         result.returncode))

        drop_caches()
        runtime = os.path.join(work, "run")
        os.makedirs(runtime, exist_ok=True)
        env = dict(os.environ, RUNTIME_DIRECTORY=runtime)
        env.pop("NOTIFY_SOCKET", None)
        started = time.monotonic()
        daemon = subprocess.Popen([ferryd, "--config", config], stderr=subprocess.PIPE, text=True, env=env)
        ready = checked = None
        deadline = started + 600
        lines = queue.Queue()
        threading.Thread(target=lambda: [lines.put(l) for l in daemon.stderr] + [lines.put(None)], daemon=True).start()
        checking = False
        while time.monotonic() < deadline:
            # A replica checked within the last day is not checked again: then nothing follows
            # "ready" but passes, and waiting for the check's end would never end.
            if ready is not None and not checking and time.monotonic() - started > ready + 5:
                break
            try:
                line = lines.get(timeout=1)
            except queue.Empty:
                continue
            if line is None:
                break
            now = time.monotonic() - started
            if ready is None and " ready:" in line:
                ready = now
                if os.path.getsize(database) <= 64 << 20:
                    break
            if "checking the replica's integrity" in line:
                checking = True
            if "integrity check" in line:
                checked = now
                break
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=30)
        print("ferryd: ready after %s s, integrity check done after %s s, exit %d" % (
            "%.2f" % ready if ready is not None else "?", "%.2f" % checked if checked is not None else "-", daemon.returncode))
    finally:
        server.stop()


if __name__ == "__main__":
    main()
