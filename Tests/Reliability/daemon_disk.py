"""daemon_suite.py part "disk": the replica on a small tmpfs, filled up and then remounted
read-only while ferryd runs. Needs root (mount); a skip otherwise, a failure under CI=true.
"""

import json
import os
import re
import shutil
import subprocess
import time

from daemon_harness import (Ferryd, ParseServer, SuiteError, diff_summary, integrity, log,
                            make_key_file, parse_store, read_rows, same_as_server, status_json,
                            temporary_directory, write_config)

STORE = "disk"
CLASS = "Disk"


def mount(*arguments):
    result = subprocess.run(["mount", *arguments], capture_output=True, text=True)
    if result.returncode != 0:
        raise SuiteError("mount %s: %s" % (" ".join(arguments), result.stderr.strip()))


def fill(directory):
    """Writes a file until the file system is full; returns its size."""
    path = os.path.join(directory, "filler")
    written = 0
    chunk = b"\0" * 4096
    with open(path, "wb", buffering=0) as f:
        try:
            while True:
                written += f.write(chunk)
        except OSError:
            pass
    return written


def only_good_rows(rows, before, after):
    """Every row is as it was before, or as the server holds it now: nothing half-written."""
    return [i for i, (version, body) in rows.items()
            if (version, body) != before.get(i)
            and not (i in after and version == after[i]["updatedAt"] and json.loads(body) == after[i])]


def failed_pass(daemon, since, cause, status_cause, check, label, config):
    """Waits for the store's failed pass after `since`; checks the log, STATUS= and
    `ferry status`."""
    line = daemon.wait_for("%s: a failed pass" % label, lambda: next(
        iter(daemon.matching(store=STORE, contains="pass failed", since=since)), None), timeout=30)
    time.sleep(0.3)  # the daemon's diagnosis line and STATUS= follow the failure at once
    log("  %s: %s" % (label, line.text[:260]))
    lines = [l.text for l in daemon.matching(store=STORE, since=since) if "pass failed" in l.text
             or l.fields.get("message_id") == "8d1f0b6e3a5c4e27b9f4c2a7d6e1053b"]
    named = [l for l in lines if re.search(cause, l, re.I)]
    if named and named[0] != line.text:
        log("  %s: %s" % (label, named[0][:260]))
    check.expect(bool(named), "%s: the log names the cause (/%s/)" % (label, cause))
    statuses = daemon.statuses(since)
    log("  %s: STATUS=%s" % (label, statuses[-1] if statuses else None))
    check.expect(any(re.search(status_cause, s) and "disk FAILING" in s for s in statuses),
                 "%s: STATUS= says the store fails and why (/%s/)" % (label, status_cause))
    published = os.path.join(daemon.runtime_dir, "unrecorded-failures.json")
    if os.path.exists(published):
        with open(published) as f:
            log("  %s: %s: %s" % (label, published, f.read().strip()[:200]))
    else:
        log("  %s: no %s" % (label, published))
    rows, code, error = status_json(config, runtime_dir=daemon.runtime_dir)
    row = rows.get(STORE, {})
    log("  %s: ferry status --json -> exit %d, state %s, last_error %s%s" % (
        label, code, row.get("state"), (row.get("last_error") or "")[:160], (" stderr " + error) if error else ""))
    # The replica cannot take the failure; ferryd publishes it in its runtime directory.
    said = row.get("state") == "failing" and re.search(cause, row.get("last_error") or "", re.I)
    check.expect(said, "%s: ferry status says failing with the cause" % label)


def start_synced(work, mountpoint, server):
    """A ferryd with its replica under `mountpoint`, once its first pass stored 300 objects.
    Returns (daemon, database path, configuration path)."""
    key = make_key_file(work)
    database = os.path.join(mountpoint, "ferry.db")
    config = os.path.join(work, "ferry.conf")
    server.seed(CLASS, 300, size=200)
    write_config(config, database, [parse_store(STORE, server.base, CLASS, key, interval="1h",
                                                jitter="0s", page_size="200",
                                                reconcile_interval="never")])
    daemon = Ferryd(config, os.path.join(work, "run"), notify=True)
    try:
        daemon.wait_for("the first sync", lambda: len(read_rows(database, STORE)) == 300, timeout=30)
    except BaseException:
        daemon.stop()
        raise
    return daemon, database, config


def run_disk(args, check):
    if os.geteuid() != 0:
        check.skip("needs root to mount file systems (id -u is %d)" % os.geteuid())
        return
    run_full(check)
    run_read_only(check)


def run_full(check):
    work = temporary_directory("ferry-disk-")
    mountpoint = os.path.join(work, "mnt")
    os.mkdir(mountpoint)
    server = ParseServer()
    daemon = None
    mounted = False
    try:
        mount("-t", "tmpfs", "-o", "size=3m", "tmpfs", mountpoint)
        mounted = True
        daemon, database, config = start_synced(work, mountpoint, server)
        log("  disk: 300 rows synced onto a 3 MiB tmpfs")

        # Full: fill the tmpfs, give the server more than the WAL can absorb, resync.
        before = read_rows(database, STORE)
        filled = fill(mountpoint)
        server.mutate(CLASS, update=100, create=3000)
        after = server.dump(CLASS)
        log("  full: filler %d KiB; the server now has %d objects" % (filled // 1024, len(after)))
        since = time.monotonic()
        daemon.reload()
        failed_pass(daemon, since, r"full", r"REPLICA DISK IS FULL", check, "full", config)
        rows = read_rows(database, STORE)
        bad = only_good_rows(rows, before, after)
        check.expect(not bad, "full: the replica holds only committed, good rows (%d rows, %d bad)" % (len(rows), len(bad)))
        check.expect(integrity(database) == "ok", "full: integrity_check ok on the full disk")
        os.remove(os.path.join(mountpoint, "filler"))
        since = time.monotonic()
        daemon.reload()
        daemon.wait_for("a pass after freeing space", lambda: daemon.matching(
            store=STORE, contains="pass finished", since=since), timeout=30)
        rows = read_rows(database, STORE)
        check.expect(same_as_server(rows, after), "full: space back, the next pass converged (%s)" % diff_summary(rows, after))

        code = daemon.stop()
        daemon = None
        check.expect(code == 0, "ferryd exits 0 on SIGTERM (got %s)" % code)
        check.expect(integrity(database) == "ok", "full: integrity_check ok at the end")
    finally:
        if daemon:
            daemon.stop()
        server.stop()
        if mounted:
            subprocess.run(["umount", mountpoint], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


def run_read_only(check):
    """Linux refuses `mount -o remount,ro` while a file on it is open for writing (EBUSY), and
    ferryd always holds its replica open. What really turns a running daemon's file system
    read-only is the kernel: ext4 with errors=remount-ro on an error. So: an ext4 image on a
    loop device, ferryd syncing onto it, then /sys/fs/ext4/<dev>/trigger_fs_error. Recovery
    needs the file system back (umount, e2fsck, mount), which needs ferryd to let go of the
    file: stop it, repair, start it again, converge."""
    if not os.path.exists("/dev/loop-control") or not shutil.which("mkfs.ext4"):
        check.skip("read-only: needs loop devices and mkfs.ext4")
        return
    work = temporary_directory("ferry-ro-")
    mountpoint = os.path.join(work, "mnt")
    image = os.path.join(work, "ext4.img")
    os.mkdir(mountpoint)
    server = ParseServer()
    daemon = None
    mounted = False
    try:
        with open(image, "wb") as f:
            f.truncate(16 << 20)
        subprocess.run(["mkfs.ext4", "-q", "-F", image], check=True, capture_output=True)
        mount("-o", "loop,errors=remount-ro", image, mountpoint)
        mounted = True
        device = os.path.basename(subprocess.run(["findmnt", "-no", "SOURCE", mountpoint], capture_output=True,
                                                 text=True).stdout.strip())
        daemon, database, config = start_synced(work, mountpoint, server)
        before = read_rows(database, STORE)
        server.mutate(CLASS, update=50, create=50)
        after = server.dump(CLASS)
        with open("/sys/fs/ext4/%s/trigger_fs_error" % device, "w") as f:
            f.write("1")
        options = subprocess.run(["findmnt", "-no", "OPTIONS", mountpoint], capture_output=True, text=True).stdout.strip()
        log("  read-only: %s, 300 rows synced, then the kernel remounted it: %s" % (device, options))
        since = time.monotonic()
        daemon.reload()
        failed_pass(daemon, since, r"read.?only", r"REPLICA FILE SYSTEM IS READ-ONLY", check, "read-only", config)
        rows = read_rows(database, STORE)
        check.expect(rows == before, "read-only: the replica is unchanged (%d rows)" % len(rows))
        check.expect(integrity(database) == "ok", "read-only: integrity_check ok")
        code = daemon.stop()
        daemon = None
        check.expect(code == 0, "read-only: ferryd exits 0 on SIGTERM (got %s)" % code)
        subprocess.run(["umount", mountpoint], check=True, capture_output=True)
        mounted = False
        repair = subprocess.run(["e2fsck", "-fy", image], capture_output=True, text=True)
        log("  read-only: e2fsck exit %d (0/1: clean or fixed)" % repair.returncode)
        mount("-o", "loop,errors=remount-ro", image, mountpoint)
        mounted = True
        since = time.monotonic()
        daemon = Ferryd(config, os.path.join(work, "run"))
        daemon.wait_for("a pass after the repair", lambda: daemon.matching(
            store=STORE, contains="pass finished", since=since), timeout=30)
        rows = read_rows(database, STORE)
        check.expect(same_as_server(rows, after), "read-only: writable again, the next pass converged (%s)" % diff_summary(rows, after))
        code = daemon.stop()
        daemon = None
        check.expect(integrity(database) == "ok", "read-only: integrity_check ok at the end")
    finally:
        if daemon:
            daemon.stop()
        server.stop()
        if mounted:
            subprocess.run(["umount", mountpoint], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
