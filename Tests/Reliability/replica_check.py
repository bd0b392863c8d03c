"""The exact comparison of a Ferry replica with its servers, the change-log audit, and
--sabotage's planted differences (crash_loop.py's step 3; see its docstring)."""

import os
import sqlite3



class Comparison:
    def __init__(self):
        self.mismatches = []
        self.compared = {}

    def bad(self, what):
        self.mismatches.append(what)


def compare_store(cmp, name, db, truth):
    """truth: {id: (version, body bytes)} against table `name`."""
    rows = {}
    for rid, version, body, deleted in db.execute(
            'SELECT id, version, CAST(body AS BLOB), deleted FROM "%s"' % name):
        rows[rid] = (version, bytes(body), deleted)
    cmp.compared[name] = len(truth)
    for rid in sorted(set(truth) - set(rows)):
        cmp.bad("%s: %s is on the server but not in the replica" % (name, rid))
    for rid in sorted(set(rows) - set(truth)):
        cmp.bad("%s: %s is in the replica but not on the server" % (name, rid))
    for rid in sorted(set(rows) & set(truth)):
        version, body, deleted = rows[rid]
        want_version, want_body = truth[rid]
        if deleted:
            cmp.bad("%s: %s is a tombstone but exists on the server" % (name, rid))
        if version != want_version:
            cmp.bad("%s: %s version %r, server %r" % (name, rid, version, want_version))
        if body != want_body:
            cmp.bad("%s: %s body differs (%d bytes, server %d)" % (name, rid, len(body), len(want_body)))
    return set(rows)


def check_change_log(cmp, db, present_by_store):
    floor = db.execute("SELECT value FROM ferry_meta WHERE key = 'change_seq_floor'").fetchone()
    floor = int(floor[0]) if floor else 0
    expected = floor + 1
    gaps = 0
    state = {}
    anomalies = 0
    entries = 0
    for seq, store, rid, op in db.execute("SELECT seq, store, id, op FROM ferry_changes ORDER BY seq"):
        entries += 1
        if seq != expected:
            gaps += 1
            if gaps <= 10:
                cmp.bad("change log: seq %d follows %d (gap)" % (seq, expected - 1))
        expected = seq + 1
        key = (store, rid)
        here = state.get(key, False)
        if (op == "insert" and here) or (op in ("update", "delete") and not here):
            anomalies += 1
            if anomalies <= 10:
                cmp.bad("change log: seq %d %s %s/%s but the id was %s" % (
                    seq, op, store, rid, "present" if here else "absent"))
        state[key] = op != "delete"
    if gaps > 10:
        cmp.bad("change log: %d gaps in all" % gaps)
    if anomalies > 10:
        cmp.bad("change log: %d out-of-order operations in all" % anomalies)
    wrong = 0
    for store, present in present_by_store.items():
        logged = {rid for (s, rid), here in state.items() if s == store and here}
        for rid in sorted(logged ^ present):
            wrong += 1
            if wrong <= 10:
                if rid in present:
                    cmp.bad("change log: %s/%s is in the replica but its latest entry is %s" % (
                        store, rid, "delete" if (store, rid) in state else "missing"))
                else:
                    cmp.bad("change log: %s/%s's latest entry is insert/update but it is not in "
                            "the replica" % (store, rid))
    if wrong > 10:
        cmp.bad("change log: %d ids whose latest entry disagrees with the replica" % wrong)
    return entries, floor


def plant_differences(workdir):
    """--sabotage: damages the converged replica in every way the comparison must notice.
    Returns [(what was planted, text the mismatch report must contain)]."""
    db = sqlite3.connect(os.path.join(workdir, "ferry.db"))
    try:
        q = [r[0] for r in db.execute("SELECT id FROM quotes ORDER BY id LIMIT 3")]
        c = [r[0] for r in db.execute("SELECT id FROM contacts ORDER BY id LIMIT 1")]
        # The damage no client could do: the guards that refuse local writes go first
        # (Ferry puts them back at its next pass).
        for (trigger,) in db.execute("SELECT name FROM sqlite_schema WHERE type = 'trigger' "
                                     "AND name LIKE 'ferry_refuse_local_%'").fetchall():
            db.execute('DROP TRIGGER "%s"' % trigger.replace('"', '""'))
        db.execute("DELETE FROM quotes WHERE id = ?", (q[0],))
        db.execute("UPDATE quotes SET body = body || ' ' WHERE id = ?", (q[1],))
        db.execute("UPDATE quotes SET version = '2000-01-01T00:00:00.000Z' WHERE id = ?", (q[2],))
        db.execute("UPDATE contacts SET body = replace(body, 'END:VCARD', 'NOTE:x\nEND:VCARD') "
                   "WHERE id = ?", (c[0],))
        db.execute("INSERT INTO contacts(id, version, body, first_seen, last_synced) "
                   "VALUES ('planted.vcf', '\"0\"', 'BEGIN:VCARD', 0, 0)")
        low, high = db.execute("SELECT min(seq), max(seq) FROM ferry_change_log").fetchone()
        middle = db.execute("SELECT seq FROM ferry_change_log WHERE seq >= ? ORDER BY seq LIMIT 1",
                            ((low + high) // 2,)).fetchone()[0]
        db.execute("DELETE FROM ferry_change_log WHERE seq = ?", (middle,))
        live = db.execute("SELECT id FROM quotes ORDER BY id DESC LIMIT 1").fetchone()[0]
        db.execute("INSERT INTO ferry_change_log(seq, store_id, id, op, time) SELECT max(seq) + 1, "
                   "(SELECT store_id FROM ferry_stores WHERE name = 'quotes'), ?, 3, 0 "
                   "FROM ferry_change_log", (live,))
        db.commit()
    finally:
        db.close()
    return [("quotes row %s deleted" % q[0], "%s is on the server but not in the replica" % q[0]),
            ("quotes body of %s changed" % q[1], "%s body differs" % q[1]),
            ("quotes version of %s changed" % q[2], "%s version" % q[2]),
            ("contacts body of %s changed" % c[0], "%s body differs" % c[0]),
            ("stray contacts row planted.vcf", "planted.vcf is in the replica but not on the server"),
            ("change-log entry %d removed" % middle, "follows %d (gap)" % (middle - 1)),
            ("change-log delete appended for live %s" % live, "quotes/%s is in the replica but its latest entry is delete" % live)]


def compare(workdir, parse, dav):
    cmp = Comparison()
    db = sqlite3.connect("file:%s?mode=ro" % os.path.join(workdir, "ferry.db"), uri=True)
    try:
        integrity = [r[0] for r in db.execute("PRAGMA integrity_check")]
        if integrity != ["ok"]:
            cmp.bad("integrity_check: %s" % "; ".join(integrity[:10]))
        quotes = compare_store(cmp, "quotes", db, parse.dump())
        contacts = compare_store(cmp, "contacts", db, dav.truth())
        cmp.log_entries, cmp.log_floor = check_change_log(
            cmp, db, {"quotes": quotes, "contacts": contacts})
        cmp.sync_state = db.execute(
            "SELECT store, last_error FROM ferry_sync_state ORDER BY store").fetchall()
    finally:
        db.close()
    return cmp
