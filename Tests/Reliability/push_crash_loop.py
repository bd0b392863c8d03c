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
import json
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
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reliability_servers import (APP_ID, MASTER_KEY, ROOT, START, ParseServer,  # noqa: E402
                                 SetupError, Xandikos, log, request)
from replica_check import Comparison, check_change_log  # noqa: E402
from crash_loop import vcard, wal_tail, write_transaction_open  # noqa: E402

COUNTERS = 6
BOTH_COUNTERS = 3  # counters 3..5 are incremented on the server too
PARSE_HEADERS = {"X-Parse-Application-Id": APP_ID, "X-Parse-Master-Key": MASTER_KEY}


def now():
    """Seconds since the script started: the clock of writes.jsonl, remote.jsonl and the
    stamps on ferryd.log's lines."""
    return time.monotonic() - START


# ---------------------------------------------------------------------------------------
# vCard text
# ---------------------------------------------------------------------------------------

def unfold(text):
    """Content lines, unfolded, without line ends or empty lines."""
    out = []
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if line[:1] in (" ", "\t") and out:
            out[-1] += line[1:]
        elif line:
            out.append(line)
    return out


def prop_name(line):
    return line.split(":", 1)[0].split(";", 1)[0].split(".")[-1].upper()


def card_props(text):
    """{property name: first value} of a vCard."""
    props = {}
    for line in unfold(text):
        if ":" in line:
            props.setdefault(prop_name(line), line.split(":", 1)[1])
    return props


def with_note(text, note):
    """The card with every NOTE replaced by one NOTE line (LF line ends, as the replica holds
    cards read from Xandikos)."""
    lines = [l for l in unfold(text) if prop_name(l) != "NOTE"]
    end = max(i for i, l in enumerate(lines) if l.upper() == "END:VCARD")
    lines.insert(end, "NOTE:" + note)
    return "\n".join(lines) + "\n"


def local_card(uid, k, note):
    return "BEGIN:VCARD\nVERSION:3.0\nUID:%s\nFN:Local %d\nN:;Local %d;;;\nNOTE:%s\nEND:VCARD\n" % (
        uid, k, k, note)


def remote_card(uid, fn, note):
    lines = ["BEGIN:VCARD", "VERSION:3.0", "UID:%s" % uid, "FN:%s" % fn, "N:;%s;;;" % fn,
             "NOTE:%s" % note, "END:VCARD"]
    return "\r\n".join(lines) + "\r\n"


# ---------------------------------------------------------------------------------------
# Parse REST
# ---------------------------------------------------------------------------------------

def parse_batch(parse, requests):
    status, data, _ = request("POST", parse.url + "/batch", {"requests": requests}, PARSE_HEADERS)
    if status != 200:
        raise SetupError("parse batch -> %d %s" % (status, data[:200]))
    return json.loads(data)


def parse_find(parse, where):
    url = parse.url + "/classes/Quote?where=" + urllib.parse.quote(json.dumps(where)) + "&limit=5"
    status, data, _ = request("GET", url, None, PARSE_HEADERS)
    if status != 200:
        raise SetupError("parse find -> %d" % status)
    return json.loads(data)["results"]


def parse_write_count(parse):
    routes = parse.admin("stats", method="GET").get("routes", {})
    return sum(routes.get(r, 0) for r in ("create", "update", "delete", "batch"))


def ferryd_parse_writes(parse, mutator):
    """How many Parse write requests (POST/PUT/DELETE, /batch) ferryd has sent: the server's
    count less the mutator's, read only while the mutator has none in flight (None when it
    had one throughout three tries)."""
    for _ in range(3):
        sent0, busy0 = mutator.rest_sent, mutator.rest_busy
        count = parse_write_count(parse)
        busy1, sent1 = mutator.rest_busy, mutator.rest_sent
        if sent0 == sent1 and not busy0 and not busy1:
            return count - sent0
    return None


# ---------------------------------------------------------------------------------------
# The local writer
# ---------------------------------------------------------------------------------------

class LocalWriter:
    """Writes the replica as any SQLite program would, and logs what it committed.

    Keys name records across id changes: a Parse object is its objectId ("Q:<id>"), an insert
    its marker ("M:<marker>"); a card its href ("C:<href>"), an insert its UID ("U:<uid>")."""

    def __init__(self, db_path, rng, seed, parse_local, card_local, counters, log_path):
        self.db_path = db_path
        self.rng = rng
        self.seed = seed
        self.parse_local = list(parse_local)  # objectIds
        self.card_local = list(card_local)    # hrefs
        self.counters = list(counters)        # objectIds
        self.inserted_markers = []            # alive (not deleted locally)
        self.inserted_uids = []
        self.next = 0
        self.db_lock = threading.Lock()       # one transaction at a time on self.con
        self.pause = threading.Event()        # set: no new transaction starts
        self.active = False                   # inside (or waiting for) a transaction
        self.events = []                      # committed writes (dicts)
        self.recent = collections.deque(maxlen=12)  # (time, store, key, row id) for the mutator
        self.counts = collections.Counter()
        self.running = False
        self.thread = None
        self.con = None
        self.log = open(log_path, "a")

    def token(self):
        self.next += 1
        return "L%d-%d" % (self.seed % 100000, self.next)

    # -- one transaction -----------------------------------------------------------------

    def transaction(self, work):
        """Runs work(con) inside BEGIN IMMEDIATE ... COMMIT; work returns a list of events
        (committed together) or None to roll back. Retries on SQLITE_BUSY."""
        for attempt in range(5):
            with self.db_lock:
                self.active = True
                try:
                    self.con.execute("BEGIN IMMEDIATE")
                    try:
                        events = work(self.con)
                    except sqlite3.IntegrityError as e:
                        # A trigger refused the write: Ferry finds it invalid. Never expected.
                        self.con.execute("ROLLBACK")
                        self.counts["refused_by_trigger"] += 1
                        log("local write refused by a trigger: %s" % e)
                        return None
                    if not events:
                        self.con.execute("ROLLBACK")
                        return None
                    before = now()
                    self.con.execute("COMMIT")
                    after = now()
                    for e in events:
                        e["t0"], e["t1"] = before, after
                        self.events.append(e)
                        self.log.write(json.dumps(e) + "\n")
                        self.counts[e["store"] + " " + e["op"]] += 1
                    self.log.flush()
                    return events
                except sqlite3.OperationalError as e:
                    if self.con.in_transaction:
                        self.con.execute("ROLLBACK")
                    if "locked" not in str(e) and "busy" not in str(e):
                        raise
                    self.counts["busy_retries"] += 1
                finally:
                    self.active = False
            time.sleep(0.05)
        self.counts["busy_gave_up"] += 1
        return None

    @staticmethod
    def entry_state(con, store, rid):
        row = con.execute("SELECT o.state, o.op, o.sent FROM ferry_outbox o JOIN ferry_stores s "
                          "ON s.store_id = o.store_id WHERE s.name = ? AND o.id = ?", (store, rid)).fetchone()
        return row

    def held(self, con, store, rid):
        row = self.entry_state(con, store, rid)
        if row and row[0] == 2:
            self.counts["skipped_held"] += 1
            return True
        return False

    # -- Parse ---------------------------------------------------------------------------

    @staticmethod
    def find_marker(con, marker):
        return con.execute("SELECT id, body FROM quotes WHERE deleted = 0 AND "
                           "json_extract(body, '$.marker') = ?", (marker,)).fetchone()

    def parse_row(self, con, key):
        if key.startswith("Q:"):
            return con.execute("SELECT id, body FROM quotes WHERE id = ? AND deleted = 0",
                               (key[2:],)).fetchone()
        return self.find_marker(con, key[2:])

    def parse_update(self, key, field=None):
        field = field or self.rng.choice(["local", "local", "text"])
        value = self.token() + (" text" if field == "text" else "")

        def work(con):
            row = self.parse_row(con, key)
            if not row or self.held(con, "quotes", row[0]):
                return None
            cur = con.execute("UPDATE quotes SET body = json_set(body, '$.' || ?, ?) WHERE id = ?",
                              (field, value, row[0]))
            if cur.rowcount != 1:
                return None
            self.recent.append((time.monotonic(), "quotes", key, row[0]))
            return [{"store": "quotes", "key": key, "id": row[0], "op": "set", "field": field,
                     "value": value}]
        return self.transaction(work)

    def parse_increment(self, key):
        def work(con):
            row = self.parse_row(con, key)
            if not row or self.held(con, "quotes", row[0]):
                return None
            cur = con.execute("UPDATE quotes SET body = json_set(body, '$.n', "
                              "json_extract(body, '$.n') + 1) WHERE id = ?", (row[0],))
            if cur.rowcount != 1:
                return None
            return [{"store": "quotes", "key": key, "id": row[0], "op": "incr", "field": "n"}]
        return self.transaction(work)

    def parse_insert(self):
        marker = "pcl-%d-%d" % (self.seed, self.next + 1)
        value = self.token()
        body = {"marker": marker, "text": "inserted here " + value, "author": "Local Writer",
                "local": value}

        def work(con):
            con.execute("INSERT INTO quotes(body) VALUES (?)", (json.dumps(body),))
            rid = con.execute("SELECT id FROM quotes WHERE rowid = last_insert_rowid()").fetchone()[0]
            return [{"store": "quotes", "key": "M:" + marker, "id": rid, "op": "insert",
                     "fields": body}]
        if self.transaction(work):
            self.inserted_markers.append(marker)

    def parse_delete(self, key):
        def work(con):
            row = self.parse_row(con, key)
            if not row or self.held(con, "quotes", row[0]):
                return None
            if con.execute("DELETE FROM quotes WHERE id = ?", (row[0],)).rowcount != 1:
                return None
            self.recent.append((time.monotonic(), "quotes", key, row[0]))
            return [{"store": "quotes", "key": key, "id": row[0], "op": "delete"}]
        done = self.transaction(work)
        if done:
            self.forget("quotes", key)
        return done

    # -- CardDAV -------------------------------------------------------------------------

    @staticmethod
    def card_row(con, key):
        if key.startswith("C:"):
            return con.execute("SELECT id, body FROM contacts WHERE id = ? AND deleted = 0",
                               (key[2:],)).fetchone()
        uid = key[2:]
        return con.execute("SELECT id, body FROM contacts WHERE deleted = 0 AND (id = ? OR "
                           "(id LIKE 'local-%' AND instr(body, ?) > 0))",
                           (uid + ".vcf", "\nUID:%s\n" % uid)).fetchone()

    def card_update(self, key):
        note = self.token()

        def work(con):
            row = self.card_row(con, key)
            if not row or self.held(con, "contacts", row[0]):
                return None
            cur = con.execute("UPDATE contacts SET body = ? WHERE id = ? AND body = ?",
                              (with_note(row[1], note), row[0], row[1]))
            if cur.rowcount != 1:
                return None
            self.recent.append((time.monotonic(), "contacts", key, row[0]))
            return [{"store": "contacts", "key": key, "id": row[0], "op": "set", "field": "NOTE",
                     "value": note}]
        return self.transaction(work)

    def card_insert(self):
        k = self.next + 1
        uid = "pcl-%d-card-%d" % (self.seed, k)
        note = self.token()
        body = local_card(uid, k, note)

        def work(con):
            con.execute("INSERT INTO contacts(body) VALUES (?)", (body,))
            rid = con.execute("SELECT id FROM contacts WHERE rowid = last_insert_rowid()").fetchone()[0]
            return [{"store": "contacts", "key": "U:" + uid, "id": rid, "op": "insert",
                     "fields": {"UID": uid, "FN": "Local %d" % k, "NOTE": note}}]
        if self.transaction(work):
            self.inserted_uids.append(uid)

    def card_delete(self, key):
        def work(con):
            row = self.card_row(con, key)
            if not row or self.held(con, "contacts", row[0]):
                return None
            if con.execute("DELETE FROM contacts WHERE id = ?", (row[0],)).rowcount != 1:
                return None
            self.recent.append((time.monotonic(), "contacts", key, row[0]))
            return [{"store": "contacts", "key": key, "id": row[0], "op": "delete"}]
        done = self.transaction(work)
        if done:
            self.forget("contacts", key)
        return done

    def forget(self, store, key):
        pools = {"Q": self.parse_local, "M": self.inserted_markers, "C": self.card_local,
                 "U": self.inserted_uids}
        pool = pools[key[0]]
        try:
            pool.remove(key[2:])
        except ValueError:
            pass

    # -- in-flight creates ---------------------------------------------------------------

    def in_flight(self, store=None, exclude=()):
        """(store, row id) of creates ferryd is sending now (ferry_outbox.sent set)."""
        with self.db_lock:
            rows = self.con.execute(
                "SELECT s.name, o.id, o.sent FROM ferry_outbox o JOIN ferry_stores s ON "
                "s.store_id = o.store_id WHERE o.op = 1 AND o.sent IS NOT NULL AND o.state = 0"
                + (" AND s.name = ?" if store else ""), (store,) if store else ()).fetchall()
        return [(s, rid) for s, rid, sent in rows if (s, rid, sent) not in exclude], rows

    def key_of(self, store, rid):
        """The key of an inserted row (by marker / UID), or None."""
        with self.db_lock:
            if store == "quotes":
                row = self.con.execute("SELECT json_extract(body, '$.marker') FROM quotes WHERE id = ?",
                                       (rid,)).fetchone()
                return "M:" + row[0] if row and row[0] else None
            row = self.con.execute("SELECT body FROM contacts WHERE id = ?", (rid,)).fetchone()
            uid = card_props(row[0]).get("UID") if row else None
            return "U:" + uid if uid and uid.startswith("pcl-") else None

    def write_in_flight(self, store, rid, action):
        """The writer's UPDATE or DELETE of a row whose create is in flight."""
        key = self.key_of(store, rid)
        if not key:
            return False
        self.counts["in_flight_" + action] += 1
        if store == "quotes":
            done = self.parse_update(key, "local") if action == "update" else self.parse_delete(key)
        else:
            done = self.card_update(key) if action == "update" else self.card_delete(key)
        return bool(done)

    # -- the thread ----------------------------------------------------------------------

    def step(self):
        rng = self.rng
        r = rng.random()
        if r < 0.6:
            roll = rng.random()
            if roll < 0.30 and self.parse_local:
                self.parse_update("Q:" + rng.choice(self.parse_local))
            elif roll < 0.45:
                self.parse_increment("Q:" + rng.choice(self.counters))
            elif roll < 0.65:
                self.parse_insert()
            elif roll < 0.75 and self.parse_local:
                self.parse_delete("Q:" + rng.choice(self.parse_local))
            elif roll < 0.88 and self.inserted_markers:
                marker = rng.choice(self.inserted_markers[-8:])
                if rng.random() < 0.7:
                    self.parse_update("M:" + marker)
                else:
                    self.parse_delete("M:" + marker)
            else:
                self.snipe("quotes")
        else:
            roll = rng.random()
            if roll < 0.45 and self.card_local:
                self.card_update("C:" + rng.choice(self.card_local))
            elif roll < 0.70:
                self.card_insert()
            elif roll < 0.80 and self.card_local:
                self.card_delete("C:" + rng.choice(self.card_local))
            elif roll < 0.90 and self.inserted_uids:
                uid = rng.choice(self.inserted_uids[-8:])
                if rng.random() < 0.7:
                    self.card_update("U:" + uid)
                else:
                    self.card_delete("U:" + uid)
            else:
                self.snipe("contacts")

    def snipe(self, store):
        """Waits up to 0.5 s for a create of `store` in flight and writes that row."""
        deadline = time.monotonic() + 0.5
        while self.running and time.monotonic() < deadline and not self.pause.is_set():
            found, _ = self.in_flight(store)
            if found:
                _, rid = found[0]
                self.write_in_flight(store, rid, "update" if self.rng.random() < 0.5 else "delete")
                return
            time.sleep(0.002)

    def start(self):
        self.con = sqlite3.connect(self.db_path, timeout=10, isolation_level=None,
                                   check_same_thread=False)
        self.running = True
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        while self.running:
            if self.pause.is_set():
                time.sleep(0.01)
                continue
            try:
                self.step()
            except Exception as e:  # reported, and the writer goes on
                self.counts["errors"] += 1
                log("local writer step failed: %r" % e)
            time.sleep(self.rng.uniform(0.02, 0.12))

    def stop(self):
        self.running = False
        if self.thread:
            self.thread.join()
        self.log.close()
        with self.db_lock:
            if self.con:
                self.con.close()
                self.con = None

    def hold_still(self):
        """Pauses the writer and waits until no transaction of its is open."""
        self.pause.set()
        while self.active:
            time.sleep(0.001)

    def go_on(self):
        self.pause.clear()


# ---------------------------------------------------------------------------------------
# The remote mutator
# ---------------------------------------------------------------------------------------

class RemoteMutator:
    """Changes the servers' remote half, bumps the shared counters, and now and then edits a
    record the local writer just changed. Logs every write the servers accepted."""

    def __init__(self, parse, dav, rng, parse_remote, card_remote, both_counters, writer,
                 replica_path, log_path):
        self.parse = parse
        self.dav = dav
        self.rng = rng
        self.parse_remote = list(parse_remote)
        self.card_remote = list(card_remote)
        self.both_counters = list(both_counters)
        self.writer = writer
        self.replica_path = replica_path
        self.next_card = 0
        self.next = 0
        self.events = []
        self.counts = collections.Counter()
        self.running = False
        self.thread = None
        self.log = open(log_path, "a")
        self.rest_sent = 0      # Parse write requests sent (the kill loop subtracts them)
        self.rest_busy = False  # one in flight

    def token(self):
        self.next += 1
        return "R%d" % self.next

    def batch(self, requests):
        self.rest_busy = True
        self.rest_sent += 1
        try:
            return parse_batch(self.parse, requests)
        finally:
            self.rest_busy = False

    def record(self, t0, store, key, op, **extra):
        e = dict(extra, store=store, key=key, op=op, t0=t0, t1=now())
        self.events.append(e)
        self.log.write(json.dumps(e) + "\n")
        self.log.flush()
        self.counts["%s %s" % (store, op)] += 1

    def step(self):
        rng = self.rng
        # The remote half of Parse: updates of chosen ids, creates, deletes.
        ids = rng.sample(self.parse_remote, min(len(self.parse_remote), rng.randint(0, 40)))
        r = self.parse.admin("mutate", {"class": "Quote", "ids": ids, "update": 0, "delete": 0,
                                        "create": rng.randint(0, 6),
                                        "same_updated_at": rng.random() < 0.3,
                                        "seed": rng.randrange(1 << 30)})
        self.parse_remote.extend(r["created"])
        self.counts["parse_background_updated"] += len(r["updated"])
        self.counts["parse_background_created"] += len(r["created"])
        if rng.random() < 0.4 and len(self.parse_remote) > 10:
            gone = rng.sample(self.parse_remote, rng.randint(1, 4))
            self.parse.admin("delete", {"class": "Quote", "ids": gone})
            for i in gone:
                self.parse_remote.remove(i)
            self.counts["parse_background_deleted"] += len(gone)
        # The remote half of the cards.
        for _ in range(rng.randint(0, 3)):
            roll = rng.random()
            if roll < 0.35 or not self.card_remote:
                name = "remote-%d.vcf" % self.next_card
                self.next_card += 1
                if self.dav.put(name, vcard(name[:-4], "Remote %s" % name[:-4], 0)) in (200, 201, 204):
                    self.card_remote.append(name)
                    self.counts["cards_background_added"] += 1
            elif roll < 0.8:
                name = rng.choice(self.card_remote)
                uid = "ferry-" + name[:-4] if name.startswith("card-") else name[:-4]
                body = vcard(uid, "Changed %s" % name[:-4], rng.randint(1, 1 << 20))
                if self.dav.put(name, body) in (200, 201, 204):
                    self.counts["cards_background_changed"] += 1
            else:
                name = rng.choice(self.card_remote)
                if self.dav.delete(name) in (200, 204, 404):
                    self.card_remote.remove(name)
                    self.counts["cards_background_deleted"] += 1
        # The shared counters.
        if self.both_counters and rng.random() < 0.5:
            oid = rng.choice(self.both_counters)
            t0 = now()
            res = self.batch([{"method": "PUT", "path": "/parse/classes/Quote/" + oid,
                                            "body": {"n": {"__op": "Increment", "amount": 1}}}])
            if "success" in res[0]:
                self.record(t0, "quotes", "Q:" + oid, "incr", field="n")
        # A record the local writer changed moments ago: a real conflict.
        if self.writer.recent and rng.random() < 0.35:
            self.conflict_edit()

    def conflict_edit(self):
        rng = self.rng
        recent = list(self.writer.recent)
        t, store, key, rid = recent[-1] if rng.random() < 0.6 else rng.choice(recent)
        self.counts["conflict_edit_tries"] += 1
        if store == "quotes":
            oid = rid
            if key.startswith("M:"):
                found = parse_find(self.parse, {"marker": key[2:]})
                if len(found) != 1:
                    return
                oid = found[0]["objectId"]
            elif rid.startswith("local-"):
                return
            roll = rng.random()
            t0 = now()
            if roll < 0.8:
                field = "local" if roll < 0.45 else "remote"
                value = self.token()
                res = self.batch([{"method": "PUT", "path": "/parse/classes/Quote/" + oid,
                                                "body": {field: value}}])
                if "success" in res[0]:
                    self.record(t0, store, key, "set", field=field, value=value, conflict_edit=True)
            else:
                res = self.batch([{"method": "DELETE", "path": "/parse/classes/Quote/" + oid}])
                if "success" in res[0]:
                    self.record(t0, store, key, "delete", conflict_edit=True)
        else:
            href = key[2:] if key.startswith("C:") else key[2:] + ".vcf"
            status, body, headers = request("GET", self.dav.url + href)
            if status != 200 or not headers.get("ETag"):
                return
            # Conditional on what was just read, so the edit never recreates a card ferryd
            # deleted meanwhile: a card deleted here can only come back through a Ferry bug.
            condition = {"If-Match": headers["ETag"]}
            props = card_props(body.decode(errors="replace"))
            uid = props.get("UID") or href[:-4]
            t0 = now()
            if rng.random() < 0.75:
                note = self.token()
                # Same UID and FN (the writer's insert set FN): only NOTE changes, as far as
                # the checks look.
                status, _, _ = request("PUT", self.dav.url + href,
                                       remote_card(uid, props.get("FN", uid), note).encode(),
                                       dict(condition, **{"Content-Type": "text/vcard; charset=utf-8"}))
                if status in (200, 201, 204):
                    self.record(t0, store, key, "set", field="NOTE", value=note, conflict_edit=True)
            else:
                status, _, _ = request("DELETE", self.dav.url + href, None, condition)
                if status in (200, 204):
                    self.record(t0, store, key, "delete", conflict_edit=True)

    def start(self):
        self.running = True
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        while self.running:
            try:
                self.step()
            except Exception as e:  # a failed step is reported, and the loop goes on
                self.counts["errors"] += 1
                log("mutator step failed: %r" % e)
            time.sleep(self.rng.uniform(0.1, 0.5))

    def stop(self):
        self.running = False
        if self.thread:
            self.thread.join()
        self.log.close()


# ---------------------------------------------------------------------------------------
# ferryd and ferry
# ---------------------------------------------------------------------------------------

def write_config(workdir, parse, dav, page_size, batch):
    secret = os.path.join(workdir, "parse-master-key")
    with open(secret, "w") as f:
        f.write(MASTER_KEY + "\n")
    os.chmod(secret, 0o600)
    conf = os.path.join(workdir, "ferry.conf")
    with open(conf, "w") as f:
        f.write("""# Written by Tests/Reliability/push_crash_loop.py
# Both stores push local writes with the default conflict policy (hold).
[ferry]
database = {db}
log-level = info
max-concurrent-passes = 2

[store quotes]
kind = parse
url = {parse}
class = Quote
application-id = {app}
master-key = file:{secret}
page-size = {page}
interval = 2s
jitter = 0s
reconcile-interval = 1s
push = yes
object-ids = client
column.author = text $.author

[store contacts]
kind = carddav
url = {dav}
multiget-batch = {batch}
interval = 2s
jitter = 0s
push = yes
column.email = text $.EMAIL
""".format(db=os.path.join(workdir, "ferry.db"), parse=parse.url, app=APP_ID, secret=secret,
           page=page_size, dav=dav.url, batch=batch))
    return conf


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
        self.cli_log_path = os.path.join(workdir, "ferry.log")
        self.cli_log = open(self.cli_log_path, "ab")
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
        self.cli_log.write(("\n=== %s: ferry %s\n" % (label, " ".join(args))).encode())
        self.cli_log.flush()
        offset = self.cli_log.tell()
        t = time.monotonic()
        p = subprocess.Popen([self.ferry, *args, "--config", self.conf, "--verbose"],
                             stdout=self.cli_log, stderr=self.cli_log, stdin=subprocess.DEVNULL)
        try:
            code = p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            code = "timeout"
        with open(self.cli_log_path, "rb") as f:
            f.seek(offset)
            out = f.read().decode(errors="replace")
        return code, time.monotonic() - t, out


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
# The checks
# ---------------------------------------------------------------------------------------

class History:
    """What each key went through: the writer's and the mutator's committed writes."""

    def __init__(self, local_events, remote_events):
        self.local = collections.defaultdict(list)
        self.remote = collections.defaultdict(list)
        for e in local_events:
            self.local[(e["store"], e["key"])].append(e)
        for e in remote_events:
            self.remote[(e["store"], e["key"])].append(e)

    def both(self, store, key):
        return bool(self.local.get((store, key))) and bool(self.remote.get((store, key)))

    def expectations(self, store, key):
        """(present, {field: allowed values}) the server may hold for a record the writer wrote
        and that is not held; present is True, False or None (either may be right)."""
        local = self.local[(store, key)]
        remote = self.remote.get((store, key), [])
        last = local[-1]
        fields = local_fields(local)
        allowed = {}
        for f, (v, e) in fields.items():
            # A remote write of the field that may have come after the local one (it ended
            # after the local commit began) may have the last word; otherwise the local value.
            later = [r for r in remote if r["op"] == "set" and r["field"] == f and r["t1"] > e["t0"]]
            allowed[f] = {v} | ({later[-1]["value"]} if later else set())
        for r in remote:
            if r["op"] == "set" and r["field"] not in fields:
                allowed[r["field"]] = {r["value"]}  # only the mutator sets it: its last value
        if last["op"] == "delete":
            # Gone: no remote write recreates a record (a Parse PUT of a deleted object fails,
            # the mutator's card PUTs are conditional), and one the mutator wrote before the
            # delete was pushed is a conflict.
            return False, {}
        deleted_after = any(r["op"] == "delete" and r["t1"] > last["t0"] for r in remote)
        return (None if deleted_after else True), allowed


def parse_objects(parse):
    """{objectId: (updatedAt, line bytes, object)} from the server's exact dump."""
    out = {}
    for oid, (version, line) in parse.dump().items():
        out[oid] = (version, line, json.loads(line))
    return out


def check(workdir, parse, dav, writer, mutator, counters, both_counters):
    cmp = Comparison()
    history = History(writer.events, mutator.events)
    db = sqlite3.connect("file:%s?mode=ro" % os.path.join(workdir, "ferry.db"), uri=True)
    figures = {}
    try:
        integrity = [r[0] for r in db.execute("PRAGMA integrity_check")]
        if integrity != ["ok"]:
            cmp.bad("integrity_check: %s" % "; ".join(integrity[:10]))
        rows = {}
        for store in ("quotes", "contacts"):
            rows[store] = {rid: (version, bytes(body), deleted) for rid, version, body, deleted in db.execute(
                'SELECT id, version, CAST(body AS BLOB), deleted FROM "%s"' % store)}
        outbox = db.execute("SELECT s.name, o.id, o.op, o.state, o.last_error, o.base_body, o.sent, "
                            "o.attempts, o.sent_version FROM ferry_outbox o JOIN ferry_stores s ON s.store_id = o.store_id "
                            "ORDER BY 1, 2").fetchall()
        conflicts = db.execute("SELECT c.conflict_id, s.name, c.id, c.local_op, c.local_body, "
                               "c.remote_version, c.remote_body, c.resolved, c.detected, c.resolution FROM ferry_conflicts c "
                               "JOIN ferry_stores s ON s.store_id = c.store_id ORDER BY 1").fetchall()
        objects = parse_objects(parse)
        cards = dav.truth()

        # -- the queue: only held entries, each with its one open conflict ----------------
        held = {}  # (store, id) -> op
        # Held because an Increment was sent, a kill lost its answer, and the remote moved past
        # the version it was sent on: whether it applied cannot be known (Parse has no
        # conditional writes), so Ferry holds it rather than count it twice or lose it.
        ambiguous = {(store, rid) for store, rid, op, state, _, _, _, _, sent_version in outbox
                     if state == 2 and sent_version is not None}
        for store, rid, op, state, last_error, base_body, sent, attempts, _ in outbox:
            if state != 2:
                cmp.bad("outbox: %s/%s op %d still state %d after the final passes (attempts %d, "
                        "sent %s, last_error %r)" % (store, rid, op, state, attempts, sent, last_error))
            else:
                held[(store, rid)] = (op, base_body)
        open_conflicts = collections.Counter((c[1], c[2]) for c in conflicts if c[7] is None)
        for sid, n in open_conflicts.items():
            if sid not in held:
                cmp.bad("conflicts: %s/%s has %d open conflict(s) but no held outbox entry" % (sid + (n,)))
            elif n != 1:
                cmp.bad("conflicts: %s/%s has %d open conflicts" % (sid + (n,)))
        for sid in held:
            if sid not in open_conflicts:
                cmp.bad("outbox: %s/%s is held but has no open conflict" % sid)
        # Under hold Ferry resolves nothing itself, except a held delete whose record the
        # remote deleted too: closed as settled by the remote, the record gone on both sides.
        def settled_by_both_deletes(c):
            store, rid = c[1], c[2]
            there = rid in (objects if store == "quotes" else cards)
            here = rid in rows[store] and not rows[store][rid][2]
            return c[3] == 3 and c[9] == "remote" and not there and not here
        resolved = [c for c in conflicts if c[7] is not None and not settled_by_both_deletes(c)]
        if resolved:
            cmp.bad("conflicts: %d resolved under conflict = hold (first: %s/%s)" % (
                len(resolved), resolved[0][1], resolved[0][2]))
        figures["settled_both_deleted"] = sum(1 for c in conflicts if c[7] is not None) - len(resolved)

        # -- the key of every held record, and whether it is a real conflict ---------------
        def key_of(store, rid, op, base_body):
            body = rows[store].get(rid, (None, None, None))[1]
            text = body.decode(errors="replace") if body is not None else (base_body or "")
            if store == "quotes":
                if rid in counters or rid in parse_ids:
                    return "Q:" + rid
                try:
                    marker = json.loads(text).get("marker") if text else None
                except ValueError:
                    marker = None
                return "M:" + marker if marker else "Q:" + rid
            uid = card_props(text).get("UID") if text else None
            if uid and uid.startswith("pcl-"):
                return "U:" + uid
            return "C:" + rid

        parse_ids = writer.parse_ids_all
        held_keys = {}
        spurious = 0
        for (store, rid), (op, base_body) in sorted(held.items()):
            key = key_of(store, rid, op, base_body)
            held_keys[(store, key)] = rid
            if (store, rid) in ambiguous:
                figures["ambiguous"] = figures.get("ambiguous", 0) + 1
                continue
            if not history.both(store, key):
                spurious += 1
                side = "local" if history.local.get((store, key)) else (
                    "remote" if history.remote.get((store, key)) else "neither side")
                cmp.bad("spurious conflict: %s/%s (%s) is held, but only %s changed it (local "
                        "writes %d, remote writes %d)" % (store, rid, key, side,
                                                          len(history.local.get((store, key), [])),
                                                          len(history.remote.get((store, key), []))))
        figures["held"] = collections.Counter(s for s, _ in held_keys)
        figures["spurious"] = spurious

        # The open conflict's remote side is the server's current version (a held create's
        # remote is its marker's object / the card named after its UID).
        for cid, store, rid, local_op, local_body, remote_version, remote_body, resolved_at, _, _ in conflicts:
            if resolved_at is not None:
                continue
            remote_id = rid
            if rid.startswith("local-"):
                text = local_body or ""
                if store == "quotes":
                    try:
                        marker = json.loads(text).get("marker") if text else None
                    except ValueError:
                        marker = None
                    found = [oid for oid, (_, _, o) in objects.items() if marker and o.get("marker") == marker]
                    remote_id = found[0] if len(found) == 1 else None
                else:
                    uid = card_props(text).get("UID")
                    remote_id = uid.replace("/", "_").replace("\\", "_") + ".vcf" if uid else None
            if store == "quotes":
                current = objects.get(remote_id, (None,))[0]
            else:
                current = cards.get(remote_id, (None,))[0]
            if remote_version != current:
                cmp.bad("conflict %d %s/%s: remote side %r, server now %r (a held conflict should "
                        "take the remote's newer side)" % (cid, store, rid, remote_version, current))

        # -- replica == servers for every record not held ---------------------------------
        truth = {"quotes": {oid: (v, line) for oid, (v, line, _) in objects.items()},
                 "contacts": cards}
        skip = {store: {rid for s, rid in held if s == store} for store in ("quotes", "contacts")}
        for store in ("quotes", "contacts"):
            want = {rid: t for rid, t in truth[store].items() if rid not in skip[store]}
            have = {rid: r for rid, r in rows[store].items() if rid not in skip[store]}
            cmp.compared[store] = len(want)
            for rid in sorted(set(want) - set(have)):
                cmp.bad("%s: %s is on the server but not in the replica" % (store, rid))
            for rid in sorted(set(have) - set(want)):
                cmp.bad("%s: %s is in the replica but not on the server" % (store, rid))
            for rid in sorted(set(want) & set(have)):
                version, body, deleted = have[rid]
                if deleted:
                    cmp.bad("%s: %s is a tombstone but exists on the server" % (store, rid))
                if version != want[rid][0]:
                    cmp.bad("%s: %s version %r, server %r" % (store, rid, version, want[rid][0]))
                if body != want[rid][1]:
                    cmp.bad("%s: %s body differs (%d bytes, server %d)" % (
                        store, rid, len(body), len(want[rid][1])))

        # -- change log: the replay agrees with the replica (held deletes count present) ----
        present = {}
        for store in ("quotes", "contacts"):
            ids = {rid for rid, r in rows[store].items() if not r[2]}
            for (s, rid), (op, _) in held.items():
                if s == store and op == 3:
                    ids.add(rid)
                if s == store and op == 1:
                    ids.discard(rid)
            present[store] = ids
        cmp.log_entries, cmp.log_floor = check_change_log(cmp, db, present)
    finally:
        db.close()

    # -- no duplicates, nothing made up -------------------------------------------------------
    # In the replica: one live row per marker / UID (a held create and a pulled copy of it
    # would be two).
    for store, name in (("quotes", "marker"), ("contacts", "UID")):
        seen = collections.defaultdict(list)
        for rid, (_, body, deleted) in rows[store].items():
            if deleted:
                continue
            text = body.decode(errors="replace")
            if store == "quotes":
                try:
                    value = json.loads(text).get("marker")
                except ValueError:
                    value = None
            else:
                value = card_props(text).get("UID")
            if value:
                seen[value].append(rid)
        for value, rids in sorted(seen.items()):
            if len(rids) > 1:
                held_rows = [r for r in sorted(rids) if (store, r) in held]
                cmp.bad("duplicate in the replica: %s %s %s is in %d rows: %s%s" % (
                    store, name, value, len(rids), ", ".join(sorted(rids)),
                    " (held: %s)" % ", ".join(held_rows) if held_rows else ""))
    by_marker = collections.defaultdict(list)
    for oid, (_, _, o) in objects.items():
        if "marker" in o:
            by_marker[o["marker"]].append(oid)
    by_uid = collections.defaultdict(list)
    for href, (_, body) in cards.items():
        uid = card_props(body.decode(errors="replace")).get("UID")
        by_uid[uid].append(href)
    committed_markers = {e["key"][2:] for e in writer.events if e["key"].startswith("M:")}
    committed_uids = {e["key"][2:] for e in writer.events if e["key"].startswith("U:")}
    duplicates = 0
    for marker, oids in sorted(by_marker.items()):
        if len(oids) > 1:
            duplicates += 1
            cmp.bad("duplicate: Parse marker %s exists %d times: %s" % (
                marker, len(oids), ", ".join(sorted(oids))))
        if marker not in committed_markers:
            cmp.bad("Parse object %s has marker %s, which no committed local insert had" % (oids[0], marker))
    for uid, hrefs in sorted(by_uid.items()):
        if len(hrefs) > 1:
            duplicates += 1
            cmp.bad("duplicate: UID %s is on %d cards: %s" % (uid, len(hrefs), ", ".join(sorted(hrefs))))
        if uid.startswith("pcl-") and uid not in committed_uids:
            cmp.bad("card %s has UID %s, which no committed local insert had" % (hrefs[0], uid))
    figures["duplicates"] = duplicates

    # -- nothing lost: every record the writer changed ----------------------------------------
    lost = 0
    checked = 0
    counter_keys = {"Q:" + c for c in counters}
    for (store, key), events in sorted(history.local.items()):
        if key in counter_keys:
            continue
        present_ok, allowed = history.expectations(store, key)
        rid = held_keys.get((store, key))
        if rid is not None:
            # Held: the local row keeps the writer's last values (the remote is not compared).
            last = events[-1]
            row = rows[store].get(rid)
            if last["op"] == "delete":
                if row is not None:
                    lost += 1
                    cmp.bad("held %s/%s (%s): deleted here, but the replica row is back" % (store, rid, key))
                continue
            if row is None:
                lost += 1
                cmp.bad("held %s/%s (%s): the local row is gone" % (store, rid, key))
                continue
            values = fields_of(store, row[1].decode(errors="replace"))
            for f, (v, _) in local_fields(events).items():
                if values.get(f) != v:
                    lost += 1
                    cmp.bad("held %s/%s (%s): local row %s = %r, the writer's last %r" % (
                        store, rid, key, f, values.get(f), v))
            continue
        checked += 1
        if store == "quotes":
            if key.startswith("M:"):
                found = [objects[o] for o in by_marker.get(key[2:], [])]
            else:
                found = [objects[key[2:]]] if key[2:] in objects else []
            server = json.loads(found[0][1]) if found else None
        else:
            href = key[2:] if key.startswith("C:") else key[2:] + ".vcf"
            server = card_props(cards[href][1].decode(errors="replace")) if href in cards else None
        where = "%s %s" % (store, key)
        if server is None:
            if present_ok is True:
                lost += 1
                cmp.bad("lost: %s was written here last (%s at %.2f s) and is not on the server" % (
                    where, events[-1]["op"], events[-1]["t1"]))
            continue
        if present_ok is False:
            lost += 1
            cmp.bad("lost delete: %s was deleted here (at %.2f s) and is still on the server" % (
                where, events[-1]["t1"]))
            continue
        for f, values in allowed.items():
            if server.get(f) not in values:
                lost += 1
                cmp.bad("lost: %s field %s is %r on the server, expected %s" % (
                    where, f, server.get(f), " or ".join(repr(v) for v in sorted(values))))
    figures["lost"] = lost
    figures["records_checked"] = checked

    # -- counters -------------------------------------------------------------------------------
    counter_report = []
    for oid in counters:
        key = "Q:" + oid
        local_n = sum(1 for e in history.local.get(("quotes", key), []) if e["op"] == "incr")
        remote_n = sum(1 for e in history.remote.get(("quotes", key), []) if e["op"] == "incr")
        if ("quotes", key) in held_keys:
            counter_report.append("%s held (+%d here, +%d there)" % (oid, local_n, remote_n))
            continue
        server = objects.get(oid)
        value = server[2].get("n") if server else None
        counter_report.append("%s n=%s (+%d here, +%d there)" % (oid, value, local_n, remote_n))
        if value != local_n + remote_n:
            lost += 1
            cmp.bad("counter %s: n = %r on the server, expected %d (%d local + %d remote increments)%s" % (
                oid, value, local_n + remote_n, local_n, remote_n,
                "" if oid in both_counters else " [local-only]"))
    figures["counters"] = counter_report
    figures["lost"] = lost
    figures["conflict_edits"] = sum(1 for e in mutator.events if e.get("conflict_edit"))
    figures["both_edited"] = sum(1 for k in history.local if history.both(*k))
    return cmp, figures


def local_fields(events):
    fields = {}
    for e in events:
        if e["op"] == "insert":
            for f, v in e["fields"].items():
                fields[f] = (v, e)
        elif e["op"] == "set":
            fields[e["field"]] = (e["value"], e)
    return fields


def fields_of(store, text):
    if store == "quotes":
        try:
            return json.loads(text)
        except ValueError:
            return {}
    return card_props(text)


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
        conf = write_config(workdir, parse, dav, a.page_size, a.multiget_batch)
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
