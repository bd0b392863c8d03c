#!/usr/bin/env python3
"""Ferry reliability suite, end to end through ferryd.

    python3 Tests/Reliability/daemon_suite.py [--parts queue,load,faults,disk] [--duration 75]
                                              [--stores 200] [--interval 3]

Runs the built `ferryd` and `ferry` (FERRY_BIN_DIR, default .build/debug) against the test
servers in Tests/Servers on 127.0.0.1, outside systemd (stderr log lines, `ferry status --json`,
`ferry reload`). Each part prints its figures and one PASS/FAIL line; the last line is
"N passed, N failed" and the exit status is non-zero when any part failed.

Parts:
  queue   ten stores due at once with max-concurrent-passes = 1 and every pass stalled: ferryd
          must sleep (< 10% of a core) while stores wait for a slot, not spin.
  load    --stores Parse stores (one class each, one parse_server.py) every --interval s with
          0.5 s jitter, reconcile-interval 10 s and the default max-concurrent-passes (4), for
          --duration s (CI: 75 s; the documented long run is --duration 600). ferryd's
          /proc/<pid> is sampled every second; after a 15 s warm-up: every fd sample <= the
          idle floor + 16, threads <= floor + 8, neither floor creeping between the first and
          last third, RSS growth between the thirds < max(20, 15 + 3/min) MB. Every store must
          have finished >= 50% of duration/interval passes and be ok in `ferry status` with a
          recent last success; one class a second is mutated (update, delete, create) and
          those stores must equal the server (ids, versions, bodies) at the end.
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
import subprocess
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon_harness import (IS_CI, AttemptWatcher, Ferryd, cpu_seconds, ParseServer, Server,  # noqa: E402
                            SuiteError, diff_summary, integrity, log, make_key_file,
                            parse_store, proc_sample, read_rows, same_as_server,
                            status_json, temporary_directory, write_config)
from daemon_faults import run_faults  # noqa: E402
from daemon_disk import run_disk  # noqa: E402


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
# Load
# ---------------------------------------------------------------------------------------------

def run_load(args, check):
    work = temporary_directory("ferry-load-")
    server = ParseServer()
    daemon = None
    try:
        key = make_key_file(work)
        database = os.path.join(work, "ferry.db")
        config = os.path.join(work, "ferry.conf")
        names = ["load_%03d" % i for i in range(args.stores)]
        for i, name in enumerate(names):
            server.seed("Load%03d" % i, 20)
        stores = [parse_store(name, server.base, "Load%03d" % i, key, interval="%ds" % args.interval,
                              jitter="500ms", page_size="100",
                              reconcile_interval="10s")
                  for i, name in enumerate(names)]
        write_config(config, database, stores)
        log("load: %d stores on one parse_server.py, interval %d s + jitter 0.5 s, %d s run" % (
            args.stores, args.interval, args.duration))

        start = time.monotonic()
        daemon = Ferryd(config, os.path.join(work, "run"))
        samples = []  # (t, fds, threads, rss KiB)
        mutated = set()
        next_mutation = start + 2
        while time.monotonic() - start < args.duration:
            if daemon.process.poll() is not None:
                raise SuiteError("ferryd exited with %s during the load run" % daemon.process.returncode)
            now = time.monotonic()
            samples.append((now - start, *proc_sample(daemon.pid)))
            if args.verbose and len(samples) % 5 == 0:
                log("  t=%3.0f s fds %d threads %d RSS %.1f MB" % (samples[-1][0], samples[-1][1],
                                                                 samples[-1][2], samples[-1][3] / 1024))
            if now >= next_mutation:
                # Keep real merges in the mix: change one store's class a second.
                index = len(mutated) * 7 % args.stores
                server.mutate("Load%03d" % index, update=3, delete=1, create=2)
                mutated.add(index)
                next_mutation = now + 1
            time.sleep(max(0, 1 - (time.monotonic() - now)))
        elapsed = time.monotonic() - start
        final_sample = proc_sample(daemon.pid)
        cpu = cpu_seconds(daemon.pid)
        lines = daemon.snapshot()
        states = status_json(config)[0]
        # Let the last mutations land (deletions need a reconciliation pass: every 10 s).
        wrong = []
        deadline = time.monotonic() + 25
        while True:
            wrong = [names[i] for i in sorted(mutated)
                     if not same_as_server(read_rows(database, names[i]), server.dump("Load%03d" % i))]
            if not wrong or time.monotonic() > deadline:
                break
            time.sleep(1)
        code = daemon.stop()
        daemon = None

        finished = {}
        failed = {}
        for line in lines:
            if line.store and "pass finished" in line.text:
                finished[line.store] = finished.get(line.store, 0) + 1
            elif line.store and "pass failed" in line.text:
                failed[line.store] = failed.get(line.store, 0) + 1
        expected = elapsed / (args.interval + 0.25)
        total_passes = sum(finished.values()) + sum(failed.values())
        log("  ferryd CPU: %.1f s in %.0f s (%.0f%% of one core), %.2f ms per pass" % (
            cpu, elapsed, 100 * cpu / elapsed, 1000 * cpu / max(1, total_passes)))
        counts = [finished.get(n, 0) for n in names]
        total = sum(counts)
        log("  passes: %d finished, %d failed in %.0f s (%.1f passes/s); per store min %d, "
            "median %d, max %d; expected about %.0f each" % (
                total, sum(failed.values()), elapsed, total / elapsed, min(counts),
                sorted(counts)[len(counts) // 2], max(counts), expected))

        warm = [s for s in samples if s[0] >= min(15, args.duration / 4)]
        third = max(1, len(warm) // 3)
        first, last = warm[:third], warm[-third:]
        fds = [s[1] for s in warm]
        threads = [s[2] for s in warm]
        rss_first = sum(s[3] for s in first) / len(first) / 1024
        rss_last = sum(s[3] for s in last) / len(last) / 1024
        log("  after warm-up (%d samples): fds %d..%d, threads %d..%d, RSS %.1f MB (first third) "
            "-> %.1f MB (last third), peak %.1f MB; final fds %d threads %d" % (
                len(warm), min(fds), max(fds), min(threads), max(threads), rss_first, rss_last,
                max(s[3] for s in samples) / 1024, final_sample[0], final_sample[1]))
        # Bounds. Descriptors: the database (db, wal, shm), stdio, the curl multi's wake-up
        # pipe and one keep-alive connection per concurrent pass; threads: the main loop,
        # curl's I/O thread, GCD workers and one thread per running pass. Both swing with the
        # passes running at the sampled instant (max-concurrent-passes = 4 by default), so:
        # every sample within the idle floor + 4 per pass slot, and the floor (each third's
        # minimum) may not creep up: a leaked socket, file or thread raises the floor.
        slots = 4
        fd_floor_first, fd_floor_last = min(s[1] for s in first), min(s[1] for s in last)
        thread_floor_first, thread_floor_last = min(s[2] for s in first), min(s[2] for s in last)
        check.expect(max(fds) <= fd_floor_first + 4 * slots and fd_floor_last <= fd_floor_first + 2,
                     "open fds bounded: max %d <= idle floor %d + 4 x %d slots; floor %d -> %d (<= +2)"
                     % (max(fds), fd_floor_first, slots, fd_floor_first, fd_floor_last))
        check.expect(max(threads) <= thread_floor_first + 2 * slots and thread_floor_last <= thread_floor_first + 1,
                     "threads bounded: max %d <= idle floor %d + 2 x %d slots; floor %d -> %d (<= +1)"
                     % (max(threads), thread_floor_first, slots, thread_floor_first, thread_floor_last))
        growth = rss_last - rss_first
        # 20 MB for a CI run; a long run may grow by 15 MB plus 3 MB a minute (what the page
        # cache, malloc arenas and the slow per-pass leaks listed in the report allow).
        limit = max(20.0, 15 + 3 * args.duration / 60)
        check.expect(growth < limit, "RSS growth between the first and last third %.1f MB < %.0f MB" % (growth, limit))
        check.expect(code == 0, "ferryd exits 0 on SIGTERM after the run (got %s)" % code)
        behind = [n for n, c in zip(names, counts) if c < 0.5 * expected]
        check.expect(not behind, "every store passed >= 50%% of %.0f expected passes (%d behind%s)"
                     % (expected, len(behind), (": " + ", ".join(behind[:5])) if behind else ""))
        stale = [n for n in names if states.get(n, {}).get("last_success_age_seconds") is None
                 or states[n]["last_success_age_seconds"] > 3 * args.interval + 5
                 or states[n].get("state") != "ok"]
        check.expect(not stale, "ferry status: every store ok with a last success under %d s old (%d not%s)"
                     % (3 * args.interval + 5, len(stale), (": " + ", ".join(stale[:5])) if stale else ""))
        check.expect(not wrong, "%d stores mutated during the run equal the server (ids, versions, bodies)%s"
                     % (len(mutated), (": differ " + ", ".join(wrong)) if wrong else ""))
        check.expect(integrity(database) == "ok", "integrity_check ok after the run")
    finally:
        if daemon:
            daemon.stop()
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


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
    parser.add_argument("--duration", type=float, default=75, help="load run seconds (long run: 600)")
    parser.add_argument("--stores", type=int, default=200)
    parser.add_argument("--interval", type=int, default=3)
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
