"""The checks of push_crash_loop.py after its kill loop: nothing local lost or sent twice, only
real conflicts held, counters adding up, the replica equal to both servers, the change log
replaying to the tables.
"""

import collections
import json
import os
import sqlite3

from replica_check import Comparison, check_change_log
from crash_parts import card_props


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
