#!/usr/bin/env python3
"""Ferry reliability suite, end to end through ferryd.

    python3 Tests/Reliability/daemon_suite.py [--parts queue,load,faults,disk] [--duration 60]
                                              [--stores 1000] [--interval 20]

Runs the built `ferryd` and `ferry` (FERRY_BIN_DIR, default .build/debug) against the test
servers in Tests/Servers on 127.0.0.1, outside systemd (stderr log lines, `ferry status --json`,
`ferry reload`). Each part prints its figures and one PASS/FAIL line; the last line is
"N passed, N failed" and the exit status is non-zero when any part failed.

Parts:
  queue   ten stores due at once with max-concurrent-passes = 1 and every pass stalled: ferryd
          must sleep (< 10% of a core) while stores wait for a slot, not spin.
  load    many stores in one ferryd (Tests/Reliability/daemon_load.py): a baseline of
          --baseline-stores, then --stores Parse stores (one class each, one parse_server.py)
          every --interval s, measured --duration s after the warm-up, then idle. Bounds: p99
          start delay of scheduled passes <= 2 s (ferryd's metrics), CPU per pass <= 1.2x the
          dearer baseline's (one runs before, one after), idle < 1% of a core, fds and threads
          bounded by the passes running, RSS flat and < --max-rss MB, STATUS= a summary, every
          store on schedule and ok, mutated stores equal to the server. CI: 1,000 stores at
          20 s; the documented long run is --stores 5000 --interval 60 --duration 3600 with the
          release build.
  faults  one store per fault: 500, 503 + Retry-After, 429 + Retry-After, reset, truncated
          body, stall past low-speed-time, invalid JSON, HTML page with 200 (each on its own
          parse_server.py, armed through /__admin/fault), DNS failure (a .invalid host) and
          TLS failure (fault_server.py with its untrusted self-signed certificate: a permanent
          failure, so Ferry must wait 900 s, not retry). For each: nothing bad merged,
          the error logged with its cause, the retry at the backoff Ferry computes (5 s base,
          doubling, half jitter; never before Retry-After) measured from ferryd's log and from
          the server's counters, and the next healthy pass converging to the server.
  disk    (root only: a skip otherwise, a failure under CI=true; ferryd gets a NOTIFY_SOCKET
          of the suite's own, so STATUS= is checked without systemd)
          full: the replica on a 3 MiB tmpfs; fill it, resync (`ferry reload`), assert the
          cause in the log, STATUS= and `ferry status`, only good rows, integrity_check ok;
          free the space, the next pass converges.
          read-only: Linux refuses `mount -o remount,ro` while ferryd holds the file open for
          writing (EBUSY), so the replica lives on an ext4 image (loop device, errors=
          remount-ro) that the kernel remounts read-only under the running daemon
          (/sys/fs/ext4/<dev>/trigger_fs_error); same assertions; then stop ferryd, umount,
          e2fsck, mount, start ferryd: the next pass converges. `ferry status` cannot report
          this failure (it reads the replica, which could not record it): printed as a known
          gap, not counted.
"""

import argparse
import os
import shutil
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon_harness import (IS_CI, Ferryd, Server, cpu_seconds, log, proc_sample,  # noqa: E402
                            temporary_directory, write_config)
from daemon_faults import run_faults  # noqa: E402
from daemon_disk import run_disk  # noqa: E402
from daemon_load import run_load  # noqa: E402


class Check:
    """Collects one part's assertions; the part passes when every one held."""

    def __init__(self, part):
        self.part = part
        self.failures = []
        self.gaps = []
        self.skipped = None

    def expect(self, condition, what):
        log("  %s %s" % ("ok  " if condition else "FAIL", what))
        if not condition:
            self.failures.append(what)
        return condition

    def gap(self, what):
        """A known gap that needs a change outside the daemon (listed, not counted)."""
        log("  GAP  %s" % what)
        self.gaps.append(what)

    def skip(self, reason):
        self.skipped = reason


# ---------------------------------------------------------------------------------------------
# A full queue: ferryd must sleep, not spin
# ---------------------------------------------------------------------------------------------

def run_queue_full(args, check):
    """Ten stores due at once, max-concurrent-passes = 1, every pass stalled by the server:
    the queue is full and eight stores wait. ferryd must sleep until a pass ends. (Until this
    suite found it, the scheduler re-armed a 0 s timer for the waiting stores in a busy loop,
    a core at 100% and ~300 bytes leaked per turn.)"""
    work = temporary_directory("ferry-queue-")
    server = Server("fault_server.py")
    daemon = None
    try:
        database = os.path.join(work, "ferry.db")
        config = os.path.join(work, "ferry.conf")
        stores = [{"name": "q_%d" % i, "kind": "json", "url": server.base + "/stall-headers?seconds=20",
                   "records-path": "items", "id-field": "id", "version-field": "v", "pagination": "none",
                   "interval": "1h", "jitter": "0s"} for i in range(10)]
        write_config(config, database, stores, global_extra="max-concurrent-passes = 1\n")
        daemon = Ferryd(config, os.path.join(work, "run"))
        daemon.wait_for("the first pass to start", lambda: daemon.matching(contains="pass started"), timeout=20)
        time.sleep(1)
        cpu_before, rss_before = cpu_seconds(daemon.pid), proc_sample(daemon.pid)[2]
        time.sleep(5)
        cpu_after, rss_after = cpu_seconds(daemon.pid), proc_sample(daemon.pid)[2]
        share = (cpu_after - cpu_before) / 5
        log("  queue full (1 running, 1 queued, 8 waiting): ferryd used %.1f%% of a core over 5 s, "
            "RSS %.1f -> %.1f MB" % (100 * share, rss_before / 1024, rss_after / 1024))
        check.expect(share < 0.10, "ferryd sleeps while the queue is full (%.1f%% of a core < 10%%)" % (100 * share))
        check.expect(rss_after - rss_before < 2048, "RSS steady while waiting (+%.1f MB < 2 MB)" % ((rss_after - rss_before) / 1024))
        code = daemon.stop()
        daemon = None
        check.expect(code == 0, "ferryd exits 0 on SIGTERM with stalled passes (got %s)" % code)
    finally:
        if daemon:
            daemon.stop()
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


# ---------------------------------------------------------------------------------------------

def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts", default="queue,load,faults,disk")
    parser.add_argument("--duration", type=float, default=60, help="load: seconds measured after the warm-up (long run: 3600)")
    parser.add_argument("--stores", type=int, default=1000, help="load: stores (long run: 5000)")
    parser.add_argument("--interval", type=int, default=20, help="load: each store's interval in seconds (long run: 60)")
    parser.add_argument("--baseline-stores", type=int, default=100, help="load: stores of the baseline run (0: none)")
    parser.add_argument("--baseline-duration", type=float, default=40, help="load: seconds the baseline is measured, rounded up to whole sweep cycles (3 intervals)")
    parser.add_argument("--idle-seconds", type=float, default=20, help="load: seconds measured with nothing due")
    parser.add_argument("--max-rss", type=int, default=300, help="load: RSS bound in MB")
    parser.add_argument("--verbose", action="store_true", help="print /proc samples as they come")
    args = parser.parse_args()
    parts = {"queue": run_queue_full, "load": run_load, "faults": run_faults, "disk": run_disk}
    passed = failed = 0
    skipped = []
    gaps = []
    for name in args.parts.split(","):
        log("\n=== %s" % name)
        check = Check(name)
        began = time.monotonic()
        try:
            parts[name](args, check)
        except Exception as error:  # the part could not run to its end: a failure
            traceback.print_exc()
            check.failures.append("%s: %s" % (type(error).__name__, error))
        seconds = time.monotonic() - began
        gaps += check.gaps
        if check.skipped and not check.failures:
            if IS_CI:
                log("FAIL %s: skipped under CI=true: %s" % (name, check.skipped))
                failed += 1
            else:
                log("SKIP %s: %s" % (name, check.skipped))
                skipped.append(name)
        elif check.failures:
            log("FAIL %s (%.0f s): %d assertion(s) failed" % (name, seconds, len(check.failures)))
            failed += 1
        else:
            log("PASS %s (%.0f s)" % (name, seconds))
            passed += 1
    for gap in gaps:
        log("known gap: %s" % gap)
    log("\n%d passed, %d failed%s" % (passed, failed, (", skipped: " + ", ".join(skipped)) if skipped else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
