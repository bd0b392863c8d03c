"""The remote half of push_crash_loop.py: another client changing both servers (Parse's REST
API, Xandikos over WebDAV), bumping the counters both sides increment, and now and then
editing a record the local writer just changed; every write logged to remote.jsonl.
"""

import collections
import json
import urllib.parse

from reliability_servers import APP_ID, MASTER_KEY, SetupError, request
from crash_parts import BackgroundSteps, card_props, now, remote_card, vcard

PARSE_HEADERS = {"X-Parse-Application-Id": APP_ID, "X-Parse-Master-Key": MASTER_KEY}


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
# The remote mutator
# ---------------------------------------------------------------------------------------

class RemoteMutator(BackgroundSteps):
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

    pause = (0.1, 0.5)

    def failed(self, error):
        self.counts["errors"] += 1
        super().failed(error)

    def stop(self):
        super().stop()
        self.log.close()
