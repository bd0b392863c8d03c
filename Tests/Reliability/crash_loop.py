#!/usr/bin/env python3
"""Ferry's end-to-end crash loop: SIGKILL `ferry sync` again and again
while the servers change underneath it, then prove the replica equals the servers exactly.

    python3 Tests/Reliability/crash_loop.py [--kills 50] [--records 100000] [--cards 2000]
        [--page-size 200] [--multiget-batch 25] [--seed N] [--budget SECONDS]
        [--ferry .build/debug/ferry] [--workdir DIR] [--keep] [--sabotage]

What it does, all on 127.0.0.1:
1. Starts Tests/Servers/parse_server.py and seeds class Quote with --records objects (POST
   /__admin/seed), the last 2 * page-size + 7 of them sharing one updatedAt, so page boundaries
   fall inside a group of equal timestamps. Starts Xandikos through Tests/Servers/dav_servers.py
   with --cards vCards written straight into its git-backed collection (one commit; a PUT per
   card costs a git commit each). Writes a ferry.conf with a Parse store (`quotes`, master key
   from a chmod-600 file) and a CardDAV store (`contacts`), both with small pages (page-size for
   Parse, multiget-batch for CardDAV) so one pass spans many requests.
2. Runs `ferry sync` and SIGKILLs it at a random moment, --kills times, restarting it each time.
   Kill moments: 10% while the process opens and prepares the database (before its first "pass
   started" line); 40% uniform over the first second after the pass starts (while the changes
   since the cursor are paged and merged; fetch and merge overlap, so a kill lands in either);
   20% inside a write transaction (the loop polls for one open, see write_transaction_open,
   and kills as soon as it sees it); 30% uniform over the measured length of a whole run (so
   kills also land in the reconciliation listing and, early on, deep in the initial sync). Every 10th run is not killed: it measures a
   whole run and is a pass that completes while both servers change under it. A run that ends
   before its kill counts as a completed pass, not as a kill. Where each kill landed is read from
   the Parse server's request log (before the first request, first changes page, changes paging
   with `order=updatedAt`, or the `keys=objectId` reconciliation listing) and from ferry's log
   (whether the CardDAV pass had finished). Just before each kill the loop also asks whether a
   write transaction is open (another connection's BEGIN IMMEDIATE fails at once), and after it
   whether the WAL holds frames past its last commit frame (same salts as the WAL header): a
   kill in the middle of writing a commit, a far narrower window, since SQLite appends a
   transaction's frames only when it commits.
   A mutator thread changes both servers between AND during the runs, and each run is preceded
   by one more Parse mutation: /__admin/mutate updates (new updatedAt, bumped `rev`), creates
   and deletes objects, one step in three with same_updated_at and about page-size updates, so
   several objects share one updatedAt across a page boundary while a pass pages through them;
   Xandikos cards are added (some at the href of a deleted card), changed and deleted with
   HTTP PUT/DELETE.
   Parse deletes reach the replica through the `keys=objectId` sweep: reconcile-interval = 1s
   makes one due on nearly every `ferry sync` of the loop, and the final and check passes run
   with `--sweep`, so the comparison never depends on when the last sweep was.
3. After the last kill the mutator stops and `ferry sync` runs to completion (retried up to 3
   times if a pass fails), then once more: that check pass must report both stores unchanged.
   Then the replica is compared exactly with the servers:
   - Parse: every objectId, version (= updatedAt) and body, byte for byte as a class GET renders
     it (/__admin/dump?lines=1), against table `quotes`;
   - Xandikos: the collection's committed git tree is the ground truth (Xandikos' etag is the
     git blob id): every href, etag and body against table `contacts`. Bodies are compared with
     CRLF read as LF: Xandikos puts the vCard's CRLFs raw into its XML, and XML parsing
     normalizes line ends (XML 1.0 section 2.11), so LF text is what any WebDAV client receives;
   - `PRAGMA integrity_check` is `ok`;
   - the change log (`ferry_change_log` / view `ferry_changes`) has contiguous sequences from
     the pruning floor + 1, and replaying it (insert only when absent, update and delete only when
     present) gives exactly the set of ids in each table; so the latest entry per id agrees with
     the replica (insert/update for present ids, delete for gone ones).
4. Prints the figures (kills survived and where they landed, passes run, mutations made,
   records compared per store, change-log entries, mismatches, time) and exits 1 on any
   mismatch, 2 on a setup failure.

--budget SECONDS: when the kills still to do would not fit in that time at the current pace,
the remaining runs draw only early-in-pass kills (never fewer kills). --sabotage checks the
checker: after convergence it damages the replica in seven known ways (a missing row, a changed
body and version, a changed card, a stray card, a change-log gap, a wrong latest entry) and exits
0 only if the comparison reports every one.

CI (scripts/test.sh): `--kills 50 --records 100000 --cards 2000 --page-size 200 --budget 170`,
then a small `--sabotage` run; about 2.5-4 minutes on the 2-core machine under load (5-minute
cap). 2,000 cards keeps each CardDAV pass short (Xandikos answers an empty-token sync of 10,000
cards with data in ~1.3 s; every killed initial sync restarts it) while the CardDAV store still
gets a real initial sync, incremental passes with multigets of 25, adds, changes and deletes.
The run's cost is dominated by the Parse reconciliation listing nearly every `ferry sync` does (500
requests of 200 ids for 100k objects) and by ferry's start-up (~0.3-1 s: opening and checking
a 60 MB replica).

Longer run (measured here: 200 kills survived, 207,792 objects and 5,129 cards compared, 0
mismatches, 19 minutes on the shared 2-core machine under load 6-12):

    python3 Tests/Reliability/crash_loop.py --kills 200 --records 200000 --cards 5000 --seed 11

Time grows with --records (each sweep lists every objectId for reconciliation: 1,000
requests at 200k) and with --kills; 1,000,000 records with 500 kills takes hours.

Needs Python 3.11+ (stdlib only), git, and Xandikos in $FERRY_VENV/bin (default
~/.cache/ferry/venv; `pip install xandikos`). The binary: --ferry, else $FERRY, else
.build/debug/ferry. Work files go to --workdir (default: a fresh temporary directory, removed
on success unless --keep; kept on failure, and its path printed, with ferry.log holding every
run's output).

A related defect this loop cannot show without failing every run is reproduced separately by
Tests/Reliability/parse_late_write_repro.py (a Parse write stamped at or before the stored
cursor is never synced).
"""

import argparse
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reliability_servers import ROOT, START, ParseServer, SetupError, Xandikos, log  # noqa: E402
from replica_check import compare, plant_differences  # noqa: E402
from crash_parts import BackgroundSteps, LoggedRuns, vcard, write_config  # noqa: E402



class Mutator(BackgroundSteps):
    """Changes both servers in small random steps; `step()` runs one, the thread many."""

    def __init__(self, parse, dav, cards, page_size, rng):
        self.parse = parse
        self.dav = dav
        self.page_size = page_size
        self.rng = rng
        self.cards = {"card-%d.vcf" % i: 0 for i in range(cards)}
        self.next_card = 0
        self.deleted = []  # hrefs deleted, some of which come back
        self.counts = dict.fromkeys(
            ["steps", "parse_updated", "parse_created", "parse_deleted", "same_updated_at_groups",
             "cards_added", "cards_recreated", "cards_changed", "cards_deleted", "card_errors"],
            0)
        self.running = False
        self.thread = None
        self.lock = threading.Lock()        # one background step at a time
        self.count_lock = threading.Lock()  # counts, also bumped by parse_step

    def step(self, cards=6):
        with self.lock:
            self._step(cards)

    def parse_step(self, rng):
        """One Parse mutation only (between runs: no wait for the background's card PUTs)."""
        self._parse_step(rng)

    def _parse_step(self, rng):
        if rng.random() < 1 / 3:
            # Several objects sharing one updatedAt, about a page of them: a page boundary falls
            # inside the group whenever a pass pages through it.
            spec = {"update": self.page_size + rng.randint(-3, 5), "create": rng.randint(0, 6),
                    "delete": rng.randint(0, 4), "same_updated_at": True}
        else:
            spec = {"update": rng.randint(0, 3 * self.page_size), "create": rng.randint(0, 60),
                    "delete": rng.randint(0, 15), "same_updated_at": False}
        spec["class"] = "Quote"
        spec["seed"] = rng.randrange(1 << 30)
        r = self.parse.admin("mutate", spec)
        with self.count_lock:
            c = self.counts
            c["same_updated_at_groups"] += 1 if spec["same_updated_at"] else 0
            c["parse_updated"] += len(r["updated"])
            c["parse_created"] += len(r["created"])
            c["parse_deleted"] += len(r["deleted"])

    def _step(self, cards):
        rng = self.rng
        c = self.counts  # the card counters are only written here, on the background thread
        with self.count_lock:
            c["steps"] += 1
        self._parse_step(rng)
        for _ in range(rng.randint(1, cards)):
            roll = rng.random()
            names = list(self.cards) if roll >= 0.35 else None
            if roll < 0.35 or not self.cards:
                if self.deleted and rng.random() < 0.3:
                    # Bring a deleted href back: the sync report then names it changed again.
                    name = self.deleted.pop(rng.randrange(len(self.deleted)))
                    c["cards_recreated"] += 1
                else:
                    name = "crash-%d.vcf" % self.next_card
                    self.next_card += 1
                uid = name[:-4]
                status = self.dav.put(name, vcard(uid, "Crash %s" % uid, 0))
                if status in (200, 201, 204):
                    self.cards[name] = 0
                    c["cards_added"] += 1
                else:
                    c["card_errors"] += 1
            elif roll < 0.8:
                name = rng.choice(names)
                rev = self.cards[name] + 1
                status = self.dav.put(name, vcard(name[:-4], "Changed %s" % name[:-4], rev))
                if status in (200, 201, 204):
                    self.cards[name] = rev
                    c["cards_changed"] += 1
                else:
                    c["card_errors"] += 1
            else:
                name = rng.choice(names)
                status = self.dav.delete(name)
                if status in (200, 204, 404):
                    self.cards.pop(name, None)
                    self.deleted.append(name)
                    c["cards_deleted"] += 1
                else:
                    c["card_errors"] += 1


def write_config_for_sync(workdir, parse, dav, page_size, batch):
    """Both stores pass only when `ferry sync` runs (hourly otherwise)."""
    return write_config(workdir, parse, dav, page_size, batch, "crash_loop.py",
                        quotes="interval = 1h\n", contacts="interval = 1h\n")


class Ferry(LoggedRuns):
    """`ferry sync` runs, their output in ferry.log."""

    def __init__(self, binary, conf, workdir):
        super().__init__(os.path.join(workdir, "ferry.log"))
        self.binary = binary
        self.conf = conf

    def sync(self, label, extra=()):
        """The process, and where its output starts in the log."""
        return self.start(label, [self.binary, "sync", "--config", self.conf, "--verbose", *extra])

    def saw(self, text, offset):
        return text in self.output(offset)

    def run_to_completion(self, label, timeout=600, extra=()):
        return self.run(label, [self.binary, "sync", "--config", self.conf, "--verbose", *extra], timeout)


# ---------------------------------------------------------------------------------------
# The loop
# ---------------------------------------------------------------------------------------

def wal_tail(db_path):
    """(committed frames, frames after the last commit) in the replica's WAL of the current
    generation (frames whose salts match the WAL header). Frames after the last commit frame
    mean the kill landed while a transaction was being written: SQLite must ignore them on the
    next open. Checksums are not verified: a torn last frame still counts as written."""
    try:
        f = open(db_path + "-wal", "rb")
    except FileNotFoundError:
        return 0, 0
    with f:
        header = f.read(32)
        if len(header) < 32:
            return 0, 0
        page_size = int.from_bytes(header[8:12], "big")
        salts = header[16:24]
        committed = frames = 0
        offset = 32
        while True:
            f.seek(offset)
            frame = f.read(24)
            if len(frame) < 24 or frame[8:16] != salts:
                break
            frames += 1
            if int.from_bytes(frame[4:8], "big"):  # database size after commit: a commit frame
                committed = frames
            offset += 24 + page_size
        return committed, frames - committed


def write_transaction_open(db_path):
    """Whether a connection holds the replica's write lock right now, that is, a write
    transaction is open: BEGIN IMMEDIATE from here fails at once. (SQLite appends a
    transaction's frames to the WAL only when it commits, so the WAL alone cannot tell a kill
    inside an open transaction from one between transactions.) The probe blocks no reader in
    WAL mode and holds the lock only for the instant it checks; ferry's writes wait up to 5 s
    for it."""
    if not os.path.exists(db_path):
        return False
    try:
        con = sqlite3.connect(db_path, timeout=0, isolation_level=None)
    except sqlite3.Error:
        return False
    try:
        con.execute("BEGIN IMMEDIATE")
        con.execute("ROLLBACK")
        return False
    except sqlite3.OperationalError as error:
        return "locked" in str(error) or "busy" in str(error)
    finally:
        con.close()


def kill_phase(stats):
    """Where the Parse pass was when killed, from the server's request log of this run."""
    queries = stats.get("queries", [])
    if not queries:
        return "before the first Parse request"
    if any("keys=objectId" in q for q in queries):
        return "Parse reconciliation listing"
    if any("count=1" in q for q in queries) and len(queries) == 1:
        return "Parse first changes page"
    return "Parse changes paging"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kills", type=int, default=50)
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--cards", type=int, default=2_000)
    ap.add_argument("--page-size", type=int, default=200)
    ap.add_argument("--multiget-batch", type=int, default=25)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--ferry", default=os.environ.get("FERRY") or os.path.join(ROOT, ".build", "debug", "ferry"))
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--keep", action="store_true", help="keep the work directory on success")
    ap.add_argument("--budget", type=float, default=None, metavar="SECONDS",
                    help="aim to finish the kill loop within this time: when the pace says the "
                         "remaining kills would not fit, draw only kills early in a pass (the "
                         "number of kills never drops)")
    ap.add_argument("--sabotage", action="store_true",
                    help="check the checker: damage the converged replica in known ways and "
                         "exit 0 only if the comparison reports every one")
    a = ap.parse_args()
    if a.seed is None:
        a.seed = random.randrange(1 << 31)
    seed = a.seed
    rng = random.Random(seed)
    if not os.access(a.ferry, os.X_OK):
        log("ferry binary not found at %s (build it, or pass --ferry / $FERRY)" % a.ferry)
        return 2
    workdir = a.workdir or tempfile.mkdtemp(prefix="ferry-crash-loop-")
    os.makedirs(workdir, exist_ok=True)
    log("seed %d, %d kills, %d Parse records, %d cards, page-size %d, work dir %s"
        % (seed, a.kills, a.records, a.cards, a.page_size, workdir))
    parse = dav = None
    try:
        parse = ParseServer(workdir)
        group = 2 * a.page_size + 7
        t = time.monotonic()
        parse.admin("seed", {"class": "Quote", "count": max(0, a.records - group), "seed": seed})
        parse.admin("seed", {"class": "Quote", "count": min(group, a.records),
                             "same_updated_at": True, "seed": seed + 1})
        log("Parse seeded with %d objects in %.1f s (port %d)" % (a.records, time.monotonic() - t, parse.port))
        t = time.monotonic()
        dav = Xandikos(workdir, a.cards)
        log("Xandikos serving %d cards at %s (%.1f s)" % (a.cards, dav.url, time.monotonic() - t))
        conf = write_config_for_sync(workdir, parse, dav, a.page_size, a.multiget_batch)
        ferry = Ferry(a.ferry, conf, workdir)
        mutator = Mutator(parse, dav, a.cards, a.page_size, random.Random(seed + 2))
        return run(a, rng, workdir, parse, dav, ferry, mutator)
    except SetupError as e:
        log("setup failed: %s" % e)
        return 2
    finally:
        for server in (dav, parse):
            if server:
                server.stop()


def run(a, rng, workdir, parse, dav, ferry, mutator):
    """The kill loop, the final passes, the comparison and the figures; the exit status."""
    kills = 0
    hurried = 0  # runs drawn in --budget's cheap mode
    torn = 0     # kills that left frames after the WAL's last commit (mid-commit kills)
    in_transaction = 0  # kills while a write transaction was open (probed just before)
    dav_kills = 0  # kills while the CardDAV pass was still running
    completed = 0
    failed_runs = 0
    phases = {}
    delays = []
    durations = []  # whole runs (let run to the end), for drawing kill delays
    startups = []   # process start to the first "pass started" line
    estimate = 4.0  # a whole run's length until one has been measured
    t_loop = time.monotonic()
    mutator.start()
    attempt = 0
    while kills < a.kills:
        attempt += 1
        # Between runs: one more Parse mutation on top of the background ones, so every run
        # starts with changes to page through (the background thread changes cards too).
        mutator.parse_step(rng)
        parse.admin("stats/reset")
        # Every 10th run is not killed: it measures how long a whole run takes under mutation
        # (the range later kills are drawn from) and is a pass that completes while both
        # servers change under it.
        startup = sorted(startups)[len(startups) // 2] if startups else 0.3
        # --budget: when the kills still to do would not fit at the current pace, only the cheap
        # kills remain (early in a pass, no unkilled runs) rather than fewer kills.
        hurry = False
        if a.budget and kills:
            elapsed = time.monotonic() - t_loop
            cheap = startup + 0.5 + 0.5  # a kill early in the pass, plus the mutation between
            hurry = elapsed + (a.kills - kills) * cheap * 1.5 > a.budget
        hurried += 1 if hurry else 0
        unkilled = attempt % 10 == 0 and not hurry
        roll = rng.random()
        if hurry and roll >= 0.7:
            roll = rng.uniform(0.1, 0.7)
        if unkilled:
            mode, delay = "none", None
        elif roll < 0.1:
            # While the process opens, verifies and prepares the database.
            mode, delay = "from-start", rng.uniform(0.005, startup)
        elif roll < 0.5:
            # While the changes since the cursor are paged and merged.
            mode, delay = "after-pass-start", rng.uniform(0.0, 1.0)
        elif roll < 0.7:
            # Inside a write transaction: as soon as one is seen open after the pass starts.
            mode, delay = "while-writing", estimate
        else:
            # Anywhere in the run, the reconciliation listing included.
            mode, delay = "after-pass-start", rng.uniform(0.0, estimate)
        label = "run %d (%s)" % (attempt, "not killed" if unkilled else
                                 "kill %.3f s %s" % (delay, mode))
        p, offset = ferry.sync(label)
        started = time.monotonic()
        code = None
        passed_start = None
        deadline = started + (delay if mode == "from-start" else 600)
        db_path = os.path.join(workdir, "ferry.db")
        while code is None and time.monotonic() < deadline:
            code = p.poll()
            if passed_start is None and ferry.saw("pass started", offset):
                passed_start = time.monotonic()
                startups.append(passed_start - started)
                if mode in ("after-pass-start", "while-writing"):
                    deadline = passed_start + delay
            if mode == "while-writing" and passed_start is not None and write_transaction_open(db_path):
                break
            time.sleep(0.002 if mode == "while-writing" else 0.005)
        if code is None:
            code = p.poll()
        if code is None:
            writing = passed_start is not None and write_transaction_open(db_path)
            os.kill(p.pid, signal.SIGKILL)
            p.wait()
            kills += 1
            delays.append(time.monotonic() - started)
            phase = kill_phase(parse.admin("stats", method="GET"))
            if passed_start is None:
                phase = "opening the database (before any pass)"
            phases[phase] = phases.get(phase, 0) + 1
            if wal_tail(db_path)[1]:
                torn += 1
            if writing:
                in_transaction += 1
            if passed_start is not None and "store=contacts" not in \
                    "".join(l for l in ferry.output(offset).splitlines() if "pass finished" in l):
                dav_kills += 1
            if kills % 10 == 0:
                log("%d kills (%d runs completed between them)" % (kills, completed + failed_runs))
        else:
            duration = time.monotonic() - started
            if unkilled:
                durations.append(duration)
                estimate = max(1.5, max(durations[-3:]))
                log("run %d not killed: exit %s in %.1f s" % (attempt, code, duration))
            if code == 0:
                completed += 1
            else:
                failed_runs += 1
                log("run %d exited %s by itself (see %s)" % (attempt, code, ferry.log_path))
    loop_seconds = time.monotonic() - t_loop
    mutator.stop()
    log("%d kills survived in %.1f s; mutator stopped: %s" % (kills, loop_seconds, json.dumps(mutator.counts)))

    final_runs = 0
    code = None
    for _ in range(3):
        code, seconds, _ = ferry.run_to_completion("final pass %d" % (final_runs + 1), extra=("--sweep",))
        final_runs += 1
        log("final pass %d: exit %s in %.1f s" % (final_runs, code, seconds))
        if code == 0:
            break
    check_output = ""
    if code == 0:
        code, seconds, check_output = ferry.run_to_completion("check pass", extra=("--sweep",))
        final_runs += 1
        log("check pass: exit %s in %.1f s" % (code, seconds))
    planted = plant_differences(workdir) if a.sabotage else []
    t = time.monotonic()
    cmp = compare(workdir, parse, dav)
    if code != 0:
        cmp.bad("the final passes did not complete (last exit %s; see %s)" % (code, ferry.log_path))
    else:
        # Converged: a pass right after the final one must find nothing to do.
        for store in ("quotes", "contacts"):
            # The pass's summary line (log lines name the store the same way).
            line = next((l for l in check_output.splitlines()
                         if re.match(r"store %s: (unchanged|\d+ inserted)" % store, l)), "")
            if not (": unchanged;" in line or "0 inserted, 0 updated, 0 deleted;" in line):
                cmp.bad("check pass changed %s: %r" % (store, line))
    log("compared in %.1f s" % (time.monotonic() - t))
    if kills >= 10 and in_transaction == 0:
        # The loop exists to cut writes short; a run where none was cut proves too little.
        cmp.bad("none of the %d kills landed inside an open write transaction" % kills)

    print()
    print("crash loop: seed %d (rerun with --seed %d; the servers' timing still varies)" % (a.seed, a.seed))
    print("  kills survived:      %d (SIGKILL while `ferry sync` ran)" % kills)
    for phase, n in sorted(phases.items(), key=lambda kv: -kv[1]):
        print("    %-36s %d" % (phase + ":", n))
    print("    %-36s %d" % ("and, of all kills, CardDAV pass running:", dav_kills))
    print("    %-36s %d" % ("and, inside an open write transaction:", in_transaction))
    print("    %-36s %d" % ("and, mid-commit (WAL tail past commit):", torn))
    if startups:
        print("  process start to first pass: median %.3f s" % sorted(startups)[len(startups) // 2])
    if delays:
        print("  kill times:          %.3f .. %.3f s after start (median %.3f)" % (
            min(delays), max(delays), sorted(delays)[len(delays) // 2]))
    print("  passes run:          %d (%d killed, %d completed under mutation, %d failed under "
          "mutation, %d final)" % (kills + completed + failed_runs + final_runs, kills, completed,
                                   failed_runs, final_runs))
    if hurried:
        print("  --budget:            %d runs drawn in the cheap mode (kills early in a pass only)" % hurried)
    if durations:
        print("  unkilled runs:       %s s" % ", ".join("%.1f" % d for d in durations))
    print("  mutations:           Parse %d updated (%d same-updatedAt groups), %d created, %d deleted;"
          % (mutator.counts["parse_updated"], mutator.counts["same_updated_at_groups"],
             mutator.counts["parse_created"], mutator.counts["parse_deleted"]))
    m = mutator.counts
    print("                       cards %d added (%d at a deleted href), %d changed, %d deleted "
          "(%d refused)" % (m["cards_added"], m["cards_recreated"], m["cards_changed"],
                            m["cards_deleted"], m["card_errors"]))
    print("  records compared:    quotes %d (Parse), contacts %d (Xandikos)" % (
        cmp.compared.get("quotes", 0), cmp.compared.get("contacts", 0)))
    print("  change log:          %d entries after floor %d" % (getattr(cmp, "log_entries", 0),
                                                                getattr(cmp, "log_floor", 0)))
    print("  mismatches:          %d%s" % (len(cmp.mismatches), " (--sabotage: planted on purpose)"
                                             if a.sabotage else ""))
    for m in cmp.mismatches[:40]:
        print("    " + m)
    print("  time:                %.1f s (kill loop %.1f s)" % (time.monotonic() - START, loop_seconds))
    if a.sabotage:
        missed = [what for what, needle in planted if not any(needle in m for m in cmp.mismatches)]
        print("  planted differences: %d, detected %d" % (len(planted), len(planted) - len(missed)))
        for what in missed:
            print("    NOT DETECTED: " + what)
        if missed:
            print("FAILED: the comparison missed planted differences; work dir kept: %s" % workdir)
            return 1
        print("OK: every planted difference was reported")
        if not a.keep and not a.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
        return 0
    if cmp.mismatches:
        print("FAILED: the replica differs; work dir kept: %s" % workdir)
        return 1
    print("OK: replica equals both servers")
    if not a.keep and not a.workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
