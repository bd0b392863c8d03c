"""The local writer of push_crash_loop.py: programs writing the replica while ferryd runs and is
killed (inserts, updates, deletes and increments through SQL, in transactions of their own),
every committed write logged to writes.jsonl for the checks.
"""

import collections
import json
import sqlite3
import threading
import time

from reliability_servers import log
from crash_parts import card_props, now, prop_name, unfold


# ---------------------------------------------------------------------------------------
# vCard text
# ---------------------------------------------------------------------------------------

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
