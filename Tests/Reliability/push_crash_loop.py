#!/usr/bin/env python3
"""Ferry's two-way crash loop: SIGKILL `ferryd` again and again while programs write the
replica's push tables and the servers change underneath, then prove that nothing local was lost
or sent twice, that every held conflict is a real one, and that the replica equals the servers.

    python3 Tests/Reliability/push_crash_loop.py [--kills 50] [--records 3000] [--cards 300]
        [--page-size 100] [--multiget-batch 25] [--seed N] [--budget SECONDS]
        [--ferryd .build/debug/ferryd] [--ferry .build/debug/ferry] [--workdir DIR] [--keep]

What it does, all on 127.0.0.1 (servers and helpers from crash_loop.py's modules):
1. Starts Tests/Servers/parse_server.py and seeds class Quote with --records objects plus six
   counter objects ({"counter": "counter-i", "n": 0}); starts Xandikos with --cards vCards.
   The seeded records are split at random into a local half (only the local writer changes
   them) and a remote half (only the mutator changes them); cards likewise (even card numbers
   local, odd remote). Writes ferry.conf: store `quotes` (Parse, master key from a chmod-600
   file; `object-ids = client`, the server started with --allow-custom-object-id) and store
   `contacts` (CardDAV), both `push = yes` with the default `conflict = hold`,
   `interval = 2s`, `jitter = 0s`, and `reconcile-interval = 1s` for Parse (a sweep on nearly
   every pass).
2. Runs `ferryd --config ferry.conf` (RUNTIME_DIRECTORY set to a directory of the work dir,
   NOTIFY_SOCKET and JOURNAL_STREAM removed, stderr appended to ferryd.log with a header per
   run), waits for the initial sync of both stores, then starts two threads:
   - the local writer (python's sqlite3 on the replica, timeout=10, BEGIN IMMEDIATE, retried
     on SQLITE_BUSY) commits a write every 20-120 ms: Parse: UPDATE json_set of `local` or
     `text` of a local-half row or of one of its own inserts (still `local-...` or pushed),
     `n = n + 1` of a counter, INSERT without id of {"marker": unique, ...}, DELETE; and
     "in-flight" writes: an UPDATE or DELETE of a row whose create ferryd is sending right now
     (ferry_outbox.sent set). CardDAV: UPDATE of a card's NOTE line, INSERT of a vCard with a
     unique UID (no id), DELETE, and the same in-flight writes. It never writes a row whose
     outbox entry is held (state 2), and logs every write it committed (time, record, values);
   - the remote mutator changes the remote half on both servers (Parse /__admin/mutate of
     chosen ids plus creates, /__admin/delete; Xandikos PUT/DELETE of cards), increments three
     of the six counters through the REST API (the other three are local-only), and about
     in about one step of three edits a record the local writer changed moments ago (Parse: the same field
     `local`, another field `remote`, or a delete; CardDAV: a PUT with another NOTE, or a
     DELETE): real conflicts. It counts its Parse REST writes, so the kill loop can tell
     ferryd's apart in the server's counters.
   The writer's log is writes.jsonl, the mutator's remote.jsonl, both stamped with the
   seconds since the script started, as every line of ferryd.log is.
3. Kills ferryd with SIGKILL --kills times, restarting it at once each time. Kill moments:
   10% while it opens the replica (before "ready"); 25% uniform 0.2-8 s after its start;
   20% inside one of ferryd's write transactions (the writer paused, another connection's
   BEGIN IMMEDIATE fails: crash_loop.write_transaction_open); 20% right after ferryd sent a
   Parse write (the server's count of POST/PUT/DELETE and /batch requests, less the
   mutator's, rose: the remote took it, the replica has not recorded it); 15% while a
   create is in flight (a new ferry_outbox.sent), after the writer updated (50%) or deleted
   (25%) that very row; 10% just after "store contacts: pushing". The last four watch for
   their moment from a random point 0-2.5 s after "ready", and kill anyway after 6 s.
   --budget SECONDS: when the kills left would not fit at the current pace, only the short
   modes are drawn (the number of kills never drops).
4. Stops the writer and the mutator, runs ferryd unkilled until ferry_outbox holds nothing but
   held entries (state 2) and each store finished two more passes, stops it with SIGTERM, then
   `ferry push` and `ferry sync --sweep` (exit 0 or 2: held conflicts leave the stores
   incomplete), and a check `ferry sync --sweep` that must find both stores unchanged. Checks:
   - ferry_outbox holds only state 2, each with exactly one open conflict, and every open
     conflict has its entry; no conflict is resolved but one held over a local delete that
     the remote then deleted too (closed with resolution "remote", gone on both sides); each held record is one both the writer and the mutator changed
     (no spurious conflict), or one whose Increment was sent and may have applied before a
     kill (its entry has sent_version: Parse cannot say, so Ferry holds it rather than count
     it twice or lose it; counted as "increments in doubt after a kill"); its conflict's remote side
     is the server's current version;
     its local row still holds the writer's last values;
   - for every record not held: the replica equals the servers exactly (Parse: id, updatedAt
     and body byte for byte as /__admin/dump?lines=1 renders them; Xandikos: href, etag and body
     from its git tree, CRLF read as LF), and PRAGMA integrity_check is ok; the change log
     audit of replica_check.check_change_log (held local deletes counted present, held
     creates absent);
   - no duplicates: each inserted marker (Parse) and UID (CardDAV) exists at most once on the
     server, and exactly once unless its last local write deleted it; no marker or UID the
     writer never committed;
   - nothing lost: for every record the writer changed and not held, each field it set holds
     its last value on the server, unless a remote write of that field may have come after
     it (then that remote value is allowed too); a record it deleted is gone (the mutator's
     card edits are conditional on the ETag it just read, so none recreates a card); a
     record it wrote is there unless the mutator deleted it afterwards;
     fields only the mutator set hold the mutator's last value;
   - counters: each counter not held has n = local increments + remote increments.
5. Prints the figures and exits 1 on any mismatch, 2 on a setup failure (servers, binaries
   missing or older than Sources/).

CI: `--kills 50 --records 3000 --cards 300 --budget 150`: about 2.5 minutes on the 2-core
machine under load (a quick look: `--kills 10`, about 30 s). The work dir (default: a new
temporary directory, removed on success unless --keep, kept and printed on failure) holds
copies of the two binaries (what the loop runs, so a rebuild meanwhile changes nothing),
ferryd.log (every run, headed "=== [time] run N (mode)", every line stamped on arrival with
the seconds since the start; "###" lines are the loop's own: kills, in-flight writes),
ferry.log (the CLI runs), writes.jsonl, remote.jsonl, ferry.conf, ferry.db and the servers'
logs (xandikos/ holds its git-backed collection).

Needs Python 3.11+ (stdlib only), git, Xandikos in $FERRY_VENV/bin (default
~/.cache/ferry/venv), and built binaries (--ferryd/--ferry, else $FERRYD/$FERRY, else
.build/debug/); this script never builds them.
"""


import argparse
import collections
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reliability_servers import ROOT, START, ParseServer, SetupError, Xandikos, log  # noqa: E402
from crash_loop import wal_tail, write_transaction_open  # noqa: E402
from crash_parts import LoggedRuns, now, write_config  # noqa: E402
from push_local_writer import LocalWriter  # noqa: E402
from push_remote_mutator import RemoteMutator, ferryd_parse_writes, parse_batch  # noqa: E402
from push_checks import check  # noqa: E402

COUNTERS = 6
BOTH_COUNTERS = 3  # counters 3..5 are incremented on the server too


# ---------------------------------------------------------------------------------------
# ferryd and ferry
# ---------------------------------------------------------------------------------------

def write_config_for_push(workdir, parse, dav, page_size, batch):
    """Both stores push local writes with the default conflict policy (hold), and pass every
    two seconds."""
    return write_config(workdir, parse, dav, page_size, batch, "push_crash_loop.py",
                        header="# Both stores push local writes with the default conflict policy (hold).\n",
                        quotes="interval = 2s\njitter = 0s\npush = yes\nobject-ids = client\n",
                        contacts="interval = 2s\njitter = 0s\npush = yes\n")


class Ferryd:
    def __init__(self, ferryd, ferry, conf, workdir):
        self.ferryd = ferryd
        self.ferry = ferry
        self.conf = conf
        self.runtime = os.path.join(workdir, "run")
        os.makedirs(self.runtime, exist_ok=True)
        self.log_path = os.path.join(workdir, "ferryd.log")
        self.log = open(self.log_path, "ab")
        self.copier = None
        self.cli_runs = LoggedRuns(os.path.join(workdir, "ferry.log"))
        self.env = dict(os.environ, RUNTIME_DIRECTORY=self.runtime)
        self.env.pop("NOTIFY_SOCKET", None)
        self.env.pop("JOURNAL_STREAM", None)

    def start(self, label):
        """ferryd, its output appended to ferryd.log with each line stamped on arrival
        (seconds since the script started, the clock of writes.jsonl and remote.jsonl)."""
        if self.copier:
            self.copier.join()
        self.log.write(("\n=== [%9.3f] %s\n" % (now(), label)).encode())
        self.log.flush()
        offset = self.log.tell()
        p = subprocess.Popen([self.ferryd, "--config", self.conf], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=self.env)

        def copy():
            for line in p.stdout:
                self.log.write(b"[%9.3f] " % now() + line)
                self.log.flush()
            p.stdout.close()
        self.copier = threading.Thread(target=copy, daemon=True)
        self.copier.start()
        return p, offset

    def note(self, text):
        """A line of the loop's own in ferryd.log (a kill, a mode's moment)."""
        self.log.write(b"[%9.3f] ### %s\n" % (now(), text.encode()))
        self.log.flush()

    def output(self, offset):
        with open(self.log_path, "rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")

    def cli(self, label, *args, timeout=300):
        """(exit code or "timeout", seconds, output) of `ferry ARGS`, its output in ferry.log."""
        return self.cli_runs.run("%s: ferry %s" % (label, " ".join(args)),
                                 [self.ferry, *args, "--config", self.conf, "--verbose"], timeout)


def kill_phase(output):
    """What ferryd was doing when killed, from its log since the start of the run."""
    if " ready: " not in output:
        return "opening the replica (before ready)"
    state = {}
    for line in output.splitlines():
        m = re.search(r"store (\w+): (pushing|push finished|pass started)", line)
        if m:
            state[m.group(1)] = {"pushing": "push", "push finished": "pull",
                                 "pass started": "pull"}[m.group(2)]
            continue
        m = re.search(r"pass (?:finished|failed): (?:store )?(\w+)", line)
        if m:
            state[m.group(1)] = None
    busy = sorted("%s %s" % (kind, store) for store, kind in state.items() if kind)
    return ", ".join(busy) if busy else "between passes"


def outbox_state(db_path):
    con = sqlite3.connect("file:%s?mode=ro" % db_path, uri=True, timeout=10)
    try:
        return con.execute("SELECT s.name, o.state, count(*) FROM ferry_outbox o JOIN ferry_stores s "
                           "ON s.store_id = o.store_id GROUP BY 1, 2").fetchall()
    finally:
        con.close()


# ---------------------------------------------------------------------------------------
# The loop
# ---------------------------------------------------------------------------------------

MODES = [  # (name, share)
    ("opening", 0.10),
    ("random", 0.25),
    ("ferryd-writing", 0.20),
    ("after-parse-write", 0.20),
    ("create-in-flight", 0.15),
    ("carddav-push", 0.10),
]
SHORT_MODES = {"opening", "ferryd-writing", "after-parse-write", "create-in-flight"}


def draw_mode(rng, hurry):
    modes = [(m, s) for m, s in MODES if not hurry or m in SHORT_MODES]
    x = rng.uniform(0, sum(s for _, s in modes))
    for m, s in modes:
        x -= s
        if x <= 0:
            return m
    return modes[-1][0]


def stale_binaries(paths):
    newest = 0
    for base, _, files in os.walk(os.path.join(ROOT, "Sources")):
        for f in files:
            if f.endswith(".swift"):
                newest = max(newest, os.path.getmtime(os.path.join(base, f)))
    return [p for p in paths if os.path.getmtime(p) < newest]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kills", type=int, default=50)
    ap.add_argument("--records", type=int, default=3000)
    ap.add_argument("--cards", type=int, default=300)
    ap.add_argument("--page-size", type=int, default=100)
    ap.add_argument("--multiget-batch", type=int, default=25)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--ferryd", default=os.environ.get("FERRYD")
                    or os.path.join(ROOT, ".build", "debug", "ferryd"))
    ap.add_argument("--ferry", default=os.environ.get("FERRY") or os.path.join(ROOT, ".build", "debug", "ferry"))
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--keep", action="store_true", help="keep the work directory on success")
    ap.add_argument("--budget", type=float, default=None, metavar="SECONDS",
                    help="aim to finish the kill loop within this time: when the pace says the "
                         "remaining kills would not fit, draw only the short kill modes (the "
                         "number of kills never drops)")
    a = ap.parse_args()
    if a.seed is None:
        a.seed = random.randrange(1 << 31)
    for binary in (a.ferryd, a.ferry):
        if not os.access(binary, os.X_OK):
            log("binary not found at %s (build it first; this script never builds)" % binary)
            return 2
    stale = stale_binaries([a.ferryd, a.ferry])
    if stale:
        log("binaries older than Sources/: %s (rebuild them first)" % ", ".join(stale))
        return 2
    rng = random.Random(a.seed)
    workdir = a.workdir or tempfile.mkdtemp(prefix="ferry-push-crash-loop-")
    os.makedirs(workdir, exist_ok=True)
    # Run copies: a rebuild while the loop runs must not swap the binary between two runs.
    os.makedirs(os.path.join(workdir, "bin"), exist_ok=True)
    for name in ("ferryd", "ferry"):
        source = getattr(a, name)
        copy = os.path.join(workdir, "bin", name)
        shutil.copy2(source, copy)
        setattr(a, name, copy)
    log("seed %d, %d kills, %d Parse records, %d cards, work dir %s" % (
        a.seed, a.kills, a.records, a.cards, workdir))
    parse = dav = None
    try:
        # Creates name their objects (Parse Server's allowCustomObjectId): a create sent again
        # after a kill is the same object, whatever the mutator did to it meanwhile. (With ids
        # the server chooses, a lost create is looked up by its fields, which a remote edit
        # made right after it can defeat: README, known gaps.)
        parse = ParseServer(workdir, ["--allow-custom-object-id"])
        parse.admin("seed", {"class": "Quote", "count": a.records, "seed": a.seed})
        res = parse_batch(parse, [{"method": "POST", "path": "/parse/classes/Quote",
                                   "body": {"counter": "counter-%d" % i, "n": 0, "text": "counter %d" % i,
                                            "author": "Counter"}} for i in range(COUNTERS)])
        counters = [r["success"]["objectId"] for r in res]
        ids = sorted(oid for oid in parse.dump() if oid not in counters)
        rng.shuffle(ids)
        parse_local, parse_remote = ids[:len(ids) // 2], ids[len(ids) // 2:]
        dav = Xandikos(workdir, a.cards)
        log("servers up: Parse %d objects + %d counters, Xandikos %d cards" % (a.records, COUNTERS, a.cards))
        conf = write_config_for_push(workdir, parse, dav, a.page_size, a.multiget_batch)
        ferryd = Ferryd(a.ferryd, a.ferry, conf, workdir)
        db_path = os.path.join(workdir, "ferry.db")
        writer = LocalWriter(db_path, random.Random(a.seed + 1), a.seed, parse_local,
                             ["card-%d.vcf" % i for i in range(0, a.cards, 2)], counters,
                             os.path.join(workdir, "writes.jsonl"))
        writer.parse_ids_all = set(ids)
        mutator = RemoteMutator(parse, dav, random.Random(a.seed + 2), parse_remote,
                                ["card-%d.vcf" % i for i in range(1, a.cards, 2)],
                                counters[COUNTERS - BOTH_COUNTERS:], writer, db_path,
                                os.path.join(workdir, "remote.jsonl"))
        return run(a, rng, workdir, parse, dav, ferryd, writer, mutator, counters)
    except SetupError as e:
        log("setup failed: %s" % e)
        return 2
    finally:
        for server in (dav, parse):
            if server:
                server.stop()


def run(a, rng, workdir, parse, dav, ferryd, writer, mutator, counters):
    db_path = os.path.join(workdir, "ferry.db")
    # The initial sync, unkilled: the writer needs rows to write.
    p, offset = ferryd.start("run 0 (initial sync, not killed)")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        out = ferryd.output(offset)
        if "pass finished: store quotes" in out and "pass finished: store contacts" in out:
            break
        if p.poll() is not None:
            raise SetupError("ferryd exited %s during the initial sync (see %s)" % (p.returncode, ferryd.log_path))
        time.sleep(0.05)
    else:
        raise SetupError("the initial sync did not finish in 120 s (see %s)" % ferryd.log_path)
    log("initial sync done in %.1f s; writer and mutator start" % (time.monotonic() - START))
    writer.start()
    mutator.start()

    kills = 0
    exits = []
    modes = collections.Counter()
    phases = collections.Counter()
    timeouts = collections.Counter()
    torn = 0
    hurried = 0
    startups = []
    in_flight_actions = collections.Counter()
    t_loop = time.monotonic()
    attempt = 0
    running = (p, offset, time.monotonic() - 0.5)
    while kills < a.kills:
        attempt += 1
        hurry = False
        if a.budget and kills:
            # A short-mode kill costs about ferryd's start plus a second; 1.5x for the load.
            elapsed = time.monotonic() - t_loop
            startup = sorted(startups)[len(startups) // 2] if startups else 0.3
            hurry = elapsed + (a.kills - kills) * (startup + 1.0) * 1.5 > a.budget
        hurried += hurry
        mode = draw_mode(rng, hurry) if attempt > 1 else "random"  # run 0 goes on: it is open
        label = "run %d (%s%s)" % (attempt, mode, ", hurried" if hurry else "")
        if running:
            p, offset, started = running
            running = None
            ferryd.note("%s: the same process goes on" % label)
        else:
            p, offset = ferryd.start(label)
            started = time.monotonic()
        # Event modes watch for their moment from a random point 0-2.5 s after ferryd is
        # ready (so not only the first push after a restart is cut), for at most `wait`.
        wait = 2.0 if hurry else 6.0
        arm_delay = rng.uniform(0, 0.3 if hurry else 2.5)
        deadline = started + 30
        armed = None
        met = False
        ready_seen = None
        baseline = None
        seen_sent = None
        push_lines = None
        if mode == "opening":
            startup = sorted(startups)[len(startups) // 2] if startups else 0.3
            deadline = started + rng.uniform(0.005, startup)
        elif mode == "random":
            deadline = started + rng.uniform(0.2, 2.0 if hurry else 8.0)
        try:
            while time.monotonic() < deadline and p.poll() is None:
                if ready_seen is None and " ready: " in ferryd.output(offset):
                    ready_seen = time.monotonic()
                    startups.append(ready_seen - started)
                if mode in ("opening", "random"):
                    time.sleep(0.003)
                    continue
                if ready_seen is None or time.monotonic() < ready_seen + arm_delay:
                    time.sleep(0.005)
                    continue
                if armed is None:
                    armed = time.monotonic()
                    deadline = armed + wait
                    if mode == "ferryd-writing":
                        writer.hold_still()
                if mode == "ferryd-writing":
                    if write_transaction_open(db_path):
                        met = True
                        break
                    time.sleep(0.002)
                elif mode == "after-parse-write":
                    count = ferryd_parse_writes(parse, mutator)
                    if count is None:
                        pass
                    elif baseline is None:
                        baseline = count
                    elif count > baseline:
                        met = True
                        break
                    time.sleep(0.002)
                elif mode == "create-in-flight":
                    found, rows = writer.in_flight(exclude=seen_sent or ())
                    if seen_sent is None:
                        seen_sent = set(rows)  # entries left sent by an earlier kill
                        continue
                    if found:
                        store, rid = found[0]
                        roll = rng.random()
                        action = "update" if roll < 0.5 else "delete" if roll < 0.75 else "none"
                        ferryd.note("create of %s/%s in flight; the writer: %s" % (store, rid, action))
                        if action != "none" and not writer.write_in_flight(store, rid, action):
                            action += " (row gone)"
                        in_flight_actions["%s %s" % (store, action)] += 1
                        met = True
                        break
                    time.sleep(0.002)
                elif mode == "carddav-push":
                    n = ferryd.output(offset).count("store contacts: pushing")
                    if push_lines is None:
                        push_lines = n
                    elif n > push_lines:
                        time.sleep(rng.uniform(0, 0.08))
                        met = True
                        break
                    time.sleep(0.005)
            code = p.poll()
            if code is None:
                os.kill(p.pid, signal.SIGKILL)
                p.wait()
                ferryd.note("SIGKILL (%s%s)" % (mode, ", its moment came" if met else ""))
        finally:
            if mode == "ferryd-writing":
                writer.go_on()
        if code is not None:
            exits.append(code)
            log("ferryd exited %s by itself in %s (see %s)" % (code, label, ferryd.log_path))
            continue
        kills += 1
        modes[mode] += 1
        if mode not in ("opening", "random") and not met:
            timeouts[mode] += 1
        phases[kill_phase(ferryd.output(offset))] += 1
        if wal_tail(db_path)[1]:
            torn += 1
        if kills % 10 == 0:
            log("%d kills; local writes %d, remote writes %d" % (kills, len(writer.events), len(mutator.events)))
    loop_seconds = time.monotonic() - t_loop
    writer.stop()
    mutator.stop()
    log("%d kills in %.1f s; writer %s; mutator %s" % (
        kills, loop_seconds, dict(writer.counts), dict(mutator.counts)))

    # Converge: ferryd unkilled until only held entries remain and two more passes of each store.
    p, offset = ferryd.start("final run (not killed)")
    t = time.monotonic()
    converged = False
    while time.monotonic() - t < 120 and p.poll() is None:
        time.sleep(0.5)
        out = ferryd.output(offset)
        if min(out.count("pass finished: store quotes"), out.count("pass finished: store contacts")) < 2:
            continue
        try:
            if all(state == 2 for _, state, _ in outbox_state(db_path)):
                converged = True
                break
        except sqlite3.Error:
            pass
    p.send_signal(signal.SIGTERM)
    try:
        term_code = p.wait(10)
    except subprocess.TimeoutExpired:
        p.kill()
        term_code = "killed after 10 s"
    log("final ferryd run: %s in %.1f s, SIGTERM exit %s; outbox %s" % (
        "converged" if converged else "NOT converged", time.monotonic() - t, term_code, outbox_state(db_path)))
    push_code, seconds, _ = ferryd.cli("final push", "push")
    log("ferry push: exit %s in %.1f s" % (push_code, seconds))
    sync_code = None
    for i in range(3):
        sync_code, seconds, _ = ferryd.cli("final sync %d" % (i + 1), "sync", "--sweep")
        log("ferry sync --sweep: exit %s in %.1f s" % (sync_code, seconds))
        if sync_code in (0, 2):
            break
    check_code, seconds, check_output = ferryd.cli("check sync", "sync", "--sweep")
    log("check ferry sync --sweep: exit %s in %.1f s" % (check_code, seconds))

    t = time.monotonic()
    cmp, figures = check(workdir, parse, dav, writer, mutator, counters, counters[COUNTERS - BOTH_COUNTERS:])
    if not converged:
        cmp.bad("ferryd did not bring the outbox down to held entries within 120 s")
    if term_code != 0:
        cmp.bad("ferryd exited %s on SIGTERM" % term_code)
    if push_code not in (0, 2):
        cmp.bad("ferry push exited %s (see %s)" % (push_code, ferryd.cli_log_path))
    if sync_code not in (0, 2):
        cmp.bad("ferry sync --sweep exited %s (see %s)" % (sync_code, ferryd.cli_log_path))
    if check_code not in (0, 2):
        cmp.bad("check ferry sync --sweep exited %s" % check_code)
    for store in ("quotes", "contacts"):
        # The pass's summary (ferry's own line and the log's "pass finished" line).
        lines = [l for l in check_output.splitlines()
                 if re.search(r"store %s: (unchanged|pushed|\d+ inserted)" % store, l)]
        if not lines:
            cmp.bad("check pass: no summary line for %s" % store)
        for line in lines:
            if not re.search(r"store %s: (unchanged|0 inserted, 0 updated, 0 deleted);" % store, line):
                cmp.bad("check pass changed %s: %r" % (store, line))
    if exits:
        cmp.bad("ferryd exited by itself %d times (codes %s)" % (len(exits), sorted(set(exits))))
    if writer.counts.get("refused_by_trigger"):
        cmp.bad("%d local writes refused by Ferry's triggers" % writer.counts["refused_by_trigger"])
    if kills >= 10 and modes["ferryd-writing"] - timeouts["ferryd-writing"] == 0:
        cmp.bad("no kill landed inside one of ferryd's write transactions")
    log("checked in %.1f s" % (time.monotonic() - t))

    local = collections.Counter()
    for e in writer.events:
        local["%s %s" % (e["store"], e["op"])] += 1
    print()
    print("push crash loop: seed %d (rerun with --seed %d; timing still varies)" % (a.seed, a.seed))
    print("  kills survived:      %d (SIGKILL of ferryd; %d exits by itself)" % (kills, len(exits)))
    for mode, n in sorted(modes.items(), key=lambda kv: -kv[1]):
        print("    %-34s %d%s" % (mode + ":", n, " (%d waited out)" % timeouts[mode] if timeouts[mode] else ""))
    print("  where they landed:")
    for phase, n in sorted(phases.items(), key=lambda kv: -kv[1]):
        print("    %-34s %d" % (phase + ":", n))
    print("    %-34s %d" % ("and, mid-commit (WAL tail):", torn))
    if in_flight_actions:
        print("  writes to in-flight creates before a kill: %s" % ", ".join(
            "%s %d" % kv for kv in sorted(in_flight_actions.items())))
    if startups:
        print("  ferryd start to ready: median %.3f s" % sorted(startups)[len(startups) // 2])
    if hurried:
        print("  --budget:            %d runs drawn from the short modes" % hurried)
    print("  local writes:        %s" % ", ".join("%s %d" % kv for kv in sorted(local.items())))
    extra = {k: v for k, v in writer.counts.items() if not k.startswith(("quotes ", "contacts "))}
    if extra:
        print("                       %s" % ", ".join("%s %d" % kv for kv in sorted(extra.items())))
    print("  remote writes:       %s" % ", ".join("%s %d" % kv for kv in sorted(mutator.counts.items())))
    print("  conflicts:           %d held (quotes %d, contacts %d); %d records changed on both sides "
          "(%d conflict edits); spurious %d; increments in doubt after a kill %d; closed by a remote "
          "delete %d" % (
              sum(figures["held"].values()), figures["held"].get("quotes", 0), figures["held"].get("contacts", 0),
              figures["both_edited"], figures["conflict_edits"], figures["spurious"], figures.get("ambiguous", 0),
              figures.get("settled_both_deleted", 0)))
    print("  counters:            %s" % "; ".join(figures["counters"]))
    print("  records compared:    quotes %d (Parse), contacts %d (Xandikos); %d locally written "
          "records checked; duplicates %d; lost %d" % (
              cmp.compared.get("quotes", 0), cmp.compared.get("contacts", 0), figures["records_checked"],
              figures["duplicates"], figures["lost"]))
    print("  change log:          %d entries after floor %d" % (
        getattr(cmp, "log_entries", 0), getattr(cmp, "log_floor", 0)))
    print("  mismatches:          %d" % len(cmp.mismatches))
    for m in cmp.mismatches[:60]:
        print("    " + m)
    if len(cmp.mismatches) > 60:
        print("    ... %d more" % (len(cmp.mismatches) - 60))
    print("  time:                %.1f s (kill loop %.1f s)" % (time.monotonic() - START, loop_seconds))
    if cmp.mismatches:
        print("FAILED: work dir kept: %s" % workdir)
        return 1
    print("OK: nothing lost or doubled, conflicts all real, replica equals both servers")
    if not a.keep and not a.workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
