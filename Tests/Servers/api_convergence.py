#!/usr/bin/env python3
"""Runs Ferry's shipped examples against the documented stand-ins of documented_apis.py and
says whether each replica converges.  Stdlib only.

    api_convergence.py [--ferry PATH] [--apis wordpress,jira,...] [--count 150]
                       [--no-variants] [--json FILE] [--keep]
                       [--jira-user-offset-minutes N] [--jira-legacy-removed]

--ferry defaults to $FERRY_BINARY, else .build/debug/ferry under the repository root.

For each API: etc/ferry/examples/<example>.conf as shipped, with only the URL's origin replaced
by the stand-in's (and the ids the example leaves to the user: DATABASE_ID, FOLDER_ID, OWNER,
REPO), credentials given
as systemd gives them ($CREDENTIALS_DIRECTORY), synced with `ferry sync --config --database`,
first once, then after each round of changes on the server; after every pass the replica's
live rows (id, and the name that carries the record's revision) are compared with the
server's /admin/live.  Rows marked * are variants (VARIANTS), not the example as shipped.

The rounds: changes (inserts, updates, deletes of the API's ordinary kind), two edits within
one stamp (the second after a pass read the first), a listing that moves while a pass pages it
(records on a read page edited, an unread one deleted, two inserted), the next pass after it, a
503 on the first request and on the second, a reset connection, the API's rate-limit answer
(and GitHub's secondary limit), short pages where the API's documentation lets it shorten them,
an expired delta/sync token (Graph, Google; Stripe: 31 days pass), then a pass with no change
(its requests counted) and last `ferry sync --sweep`.

An API passes when every round ends with exit 0 and the replica equal to the server, except
for what no client could have: records the API lists nowhere once gone (deleted for good, or
in a trash its listing leaves out), which wait for a sweep, and records changed after the pass
had read them; and when a pass with nothing changed costs no more requests than a careful
client of the API's change feed. The exit status is 0 when every API passes.
"""

import argparse
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import documented_apis  # noqa: E402  (ids the examples leave to the user)

CASES = {
    "wordpress": dict(example="wordpress.conf", store="wp_posts", origin="https://blog.example.com",
                      credential="wp-application-password", name="$.title.rendered", sweep_only={"delete"}),
    "jira": dict(example="jira.conf", store="jira_issues", origin="https://example.atlassian.net",
                 credential="jira-api-token", name="$.fields.summary", sweep_only={"delete"}),
    "stripe": dict(example="stripe.conf", store="stripe_customers", origin="https://api.stripe.com",
                   credential="stripe-secret-key", name="$.name"),
    "notion": dict(example="notion.conf", store="notion_pages", origin="https://api.notion.com",
                   credential="notion-token", name="$.properties.Name.title[0].plain_text",
                   ids={"DATABASE_ID": documented_apis.Notion.DATABASE}, sweep_only={"trash", "delete"}),
    "github": dict(example="graphql.conf", store="graphql_items", origin="https://api.github.com",
                   credential="graphql-token", name="$.title",
                   ids={"OWNER": documented_apis.GitHub.OWNER, "REPO": documented_apis.GitHub.REPO}, sweep_only={"delete"}),
    "msgraph": dict(example="msgraph.conf", store="graph_items", origin="https://graph.microsoft.com",
                    credential="graph-token", name="$.displayName", ids={"FOLDER_ID": documented_apis.MSGraph.FOLDER}),
    "google": dict(example="google.conf", store="calendar_events", origin="https://www.googleapis.com",
                   credential="google-token", name="$.summary"),
    "hubspot": dict(example="hubspot.conf", store="hubspot_contacts", origin="https://api.hubapi.com",
                    credential="hubspot-token", name="$.properties.firstname", sweep_only={"delete"}),
}

# Variants of an example (rows marked *): LABEL -> (API, [(old, new), ...]), an old string or a
# compiled pattern replaced in the example's text; for trying a change before it is shipped.
VARIANTS = {}

# What a careful client reading that API's change feed needs for a pass with no change, from the
# API's documentation (requests; "+ sweep" where deletions are visible only in a full listing).
CAREFUL = {
    "wordpress": ("2", "orderby=modified&modified_after=<mark - 1 s>: 1 page; status=trash (authenticated): 1 page; "
                       "force-deleted posts only in a full id listing (_fields=id, ceil(N/100))"),
    "jira": ("1", "JQL updated >= \"<mark's minute>\" ORDER BY updated ASC: 1 page; deleted issues only in a full id listing"),
    "stripe": ("1", "GET /v1/events?type=customer.*&ending_before=<newest event seen>: 1 page (created/updated/deleted)"),
    "notion": ("1", "filter last_edited_time on_or_after <mark's minute>, sorted ascending: 1 page; trashed pages only in a full listing"),
    "github": ("1", "issues(filterBy:{since: <mark>}, orderBy:{UPDATED_AT, ASC}, first:100): 1 page; deleted issues only in a full listing"),
    "msgraph": ("1", "GET <@odata.deltaLink>: 1 page (changes and @removed)"),
    "google": ("1", "GET ...events?syncToken=<nextSyncToken>: 1 page (changes and cancelled)"),
    "hubspot": ("2", "POST /crm/v3/objects/contacts/search lastmodifieddate GTE <mark>: 1 page; GET ?archived=true: ceil(archived/100)"),
}


class Server:
    def __init__(self, api, count, extra=()):
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "documented_apis.py"), "--api", api,
                                      "--count", str(count), "--token", "secret"] + list(extra),
                                     stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        self.port = int(line.split()[1])
        self.origin = "http://127.0.0.1:%d" % self.port

    def control(self, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.origin + path, data=data, method="POST" if body is not None else "GET")
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read())

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


class Run:
    def __init__(self, label, api, ferry, count, workdir, server_args=()):
        self.label, self.api, self.ferry = label, api, ferry
        self.case = CASES[api]
        self.dir = workdir
        self.server = Server(api, count, server_args)
        self.rounds = []
        text = open(os.path.join(ROOT, "etc/ferry/examples", self.case["example"]), encoding="utf-8").read()
        assert self.case["origin"] in text, "%s no longer names %s" % (self.case["example"], self.case["origin"])
        text = text.replace(self.case["origin"], self.server.origin)
        for placeholder, value in self.case.get("ids", {}).items():
            text = text.replace(placeholder, value)
        for old, new in VARIANTS.get(label, (None, []))[1]:
            text = old.sub(new.replace("\\", "\\\\"), text) if hasattr(old, "sub") else text.replace(old, new)
        self.config = os.path.join(self.dir, self.case["example"])
        with open(self.config, "w", encoding="utf-8") as f:
            f.write(text)
        self.creds = os.path.join(self.dir, "credentials")
        os.makedirs(self.creds, exist_ok=True)
        path = os.path.join(self.creds, self.case["credential"])
        with open(path, "w") as f:
            f.write("secret")
        os.chmod(path, 0o600)
        self.database = os.path.join(self.dir, "replica.db")

    # ---- one pass and its comparison -----------------------------------------------------

    def sync(self, round_name, sweep=False, moving=False):
        """One pass; `moving`: records change during it (those it read before they changed, and
        those made after it began, are excused in this round, never in the next)."""
        before = self.server.control("/admin/stats")["requests"]
        known = {row["id"] for row in self.server.control("/admin/live")} | {row["id"] for row in self.server.control("/admin/gone")}
        env = dict(os.environ, CREDENTIALS_DIRECTORY=self.creds, STATE_DIRECTORY=os.path.join(self.dir, "state"))
        args = [self.ferry, "sync", "--config", self.config, "--database", self.database] + (["--sweep"] if sweep else [])
        started = time.monotonic()
        try:
            p = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
            rc, out = p.returncode, (p.stdout + p.stderr)
        except subprocess.TimeoutExpired as e:
            rc, out = "timeout", ((e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or ""))
        seconds = time.monotonic() - started
        after = self.server.control("/admin/stats")["requests"]
        self.server.control("/admin/schedule", {"clear": True})
        result = dict(round=round_name, rc=rc, requests=after - before, seconds=round(seconds, 2),
                      output=[l for l in out.strip().splitlines() if l.strip()][-4:])
        result.update(self.compare(sweep=sweep, moving=moving, known=known))
        self.rounds.append(result)
        return result

    def replica(self):
        if not os.path.exists(self.database):
            return {}
        db = sqlite3.connect(self.database)
        try:
            rows = db.execute('SELECT id, json_extract(body, ?) FROM "%s" WHERE deleted = 0' % self.case["store"],
                              (self.case["name"],)).fetchall()
        except sqlite3.OperationalError:
            rows = []
        finally:
            db.close()
        return {str(i): n for i, n in rows}

    def compare(self, sweep=False, moving=False, known=()):
        """The replica against the server. Excused, and counted apart: between sweeps, records
        the API lists nowhere once gone (CASES' sweep_only: deleted for good, trashed where the
        listing leaves out the trash), which only a sweep can find; in a round whose records
        changed during the pass, the records it had read before they changed."""
        live = {row["id"]: row for row in self.server.control("/admin/live")}
        gone = {row["id"]: row["how"] for row in self.server.control("/admin/gone")}
        have = self.replica()
        missing = sorted(set(live) - set(have), key=lambda i: live[i]["key"])
        extra = sorted(set(have) - set(live))
        stale = sorted((i for i in set(live) & set(have) if have[i] != live[i]["name"]), key=lambda i: live[i]["key"])
        awaiting = [] if sweep else [i for i in extra if gone.get(i) in self.case.get("sweep_only", set())]
        extra = [i for i in extra if i not in awaiting]
        excused_stale = stale if moving else []
        stale = [i for i in stale if i not in excused_stale]
        made_during = [i for i in missing if moving and i not in known]
        missing = [i for i in missing if i not in made_during]
        keyed = lambda ids: ["%s(key %s)" % (i, live[i]["key"]) for i in ids]
        return dict(comparisons=len(set(live) | set(have)), mismatches=len(missing) + len(extra) + len(stale),
                    missing=keyed(missing)[:6], missing_n=len(missing), extra=extra[:6], extra_n=len(extra),
                    stale=["%s(key %s): replica %r, server %r" % (i, live[i]["key"], have[i], live[i]["name"]) for i in stale[:4]],
                    stale_n=len(stale), awaiting_sweep=len(awaiting), moved_under_pass=len(excused_stale) + len(made_during))

    # ---- the rounds --------------------------------------------------------------------------

    def ops(self, *ops):
        for op in ops:
            kind = op["op"]
            if kind == "create":
                self.server.control("/admin/create", {"count": op["count"]})
            elif kind == "update":
                self.server.control("/admin/update", {"keys": op["keys"]})
            elif kind == "delete":
                self.server.control("/admin/delete", {"keys": op["keys"], "how": op.get("how")})

    def scenario(self):
        s = self.server
        self.sync("first sync")
        deletes = [{"op": "delete", "keys": [7, 60]}]
        if self.api == "wordpress":
            deletes.append({"op": "delete", "keys": [8], "how": "delete"})  # force=true: gone for good
        self.ops({"op": "create", "count": 4}, {"op": "update", "keys": [3, 50, 90]}, *deletes)
        self.sync("inserts, updates, deletes")

        s.control("/admin/clock", {"freeze": True})
        self.ops({"op": "update", "keys": [20]})
        self.sync("edit A (stamp T)")
        self.ops({"op": "update", "keys": [20]})
        s.control("/admin/clock", {"freeze": False})
        self.sync("edit B in the same stamp T")

        # Enough changes that an incremental pass pages; then, before its second request: two
        # records it has read are edited, one it has not is deleted, two are inserted.
        self.ops({"op": "update", "keys": list(range(30, 145))})
        s.control("/admin/schedule", {"at": 2, "ops": [{"op": "update", "keys": [31, 32]}, {"op": "delete", "keys": [140]},
                                                       {"op": "create", "count": 2}]})
        self.sync("listing moves during the pass", moving=True)
        self.sync("the pass after it")

        for name, fault in (("503 on the first request", {"kind": "status", "status": 503, "at": 1}),
                            ("503 on the second request", {"kind": "status", "status": 503, "at": 2}),
                            ("connection reset", {"kind": "reset", "at": 1}),
                            ("rate limited", {"kind": "ratelimit", "at": 1})):
            # Enough changes that an incremental pass pages, so the second request is in the pass.
            self.ops({"op": "update", "keys": [11, 12] + list(range(20, 130))}, {"op": "create", "count": 1})
            s.control("/admin/fault", fault)
            self.sync(name)
        if self.api == "github":
            self.ops({"op": "update", "keys": [13]})
            s.control("/admin/fault", {"kind": "secondary", "at": 1})
            self.sync("secondary rate limit (403)")

        self.ops({"op": "update", "keys": list(range(40, 70))}, {"op": "delete", "keys": [71]})
        short = s.control("/admin/fault", {"kind": "short", "size": 7, "count": 200})
        self.sync("short pages" if short["applies"] else "short pages (n/a: API keeps the size)")

        self.ops({"op": "update", "keys": [14]}, {"op": "delete", "keys": [15]})
        expired = s.control("/admin/expire", {})
        tokens = re.search(r"^(sync-token|delta-link) =", open(self.config).read(), re.M)
        self.sync("expired token" if expired.get("expired") and tokens else "expired token (n/a: no token kept)")

        self.sync("settling pass")
        self.sync("no-change pass")
        self.sync("--sweep", sweep=True)

    def summary(self):
        plain = [r for r in self.rounds if r["round"] != "--sweep"]
        last = plain[-1]
        sweep = self.rounds[-1]
        clean = all(r["mismatches"] == 0 and r["rc"] == 0 for r in self.rounds)
        return dict(api=self.label, converged=clean,
                    clean_rounds="%d/%d" % (sum(1 for r in plain if r["mismatches"] == 0 and r["rc"] == 0), len(plain)),
                    mismatches=sum(r["mismatches"] for r in plain), comparisons=sum(r["comparisons"] for r in plain),
                    final="%d / %d" % (last["mismatches"], sweep["mismatches"]),
                    exits=sorted({str(r["rc"]) for r in self.rounds}), no_change=last["requests"],
                    careful=CAREFUL[self.label][0])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ferry", default=os.environ.get("FERRY_BINARY", os.path.join(ROOT, ".build/debug/ferry")))
    ap.add_argument("--apis", default=",".join(CASES))
    ap.add_argument("--count", type=int, default=150)
    ap.add_argument("--no-variants", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--keep", action="store_true", help="keep the work directories (configs, replicas)")
    ap.add_argument("--jira-user-offset-minutes", type=int, default=0,
                    help="the Jira user's time zone, in which the stand-in reads JQL dates (default UTC)")
    ap.add_argument("--jira-legacy-removed", action="store_true",
                    help="GET /rest/api/3/search answers 410 Gone, as on Jira Cloud since CHANGE-2046")
    args = ap.parse_args()
    labels = [a for a in args.apis.split(",") if a]
    if not args.no_variants:
        labels += [v for v, (api, _) in VARIANTS.items() if api in labels]
    top = tempfile.mkdtemp(prefix="ferry-apis-")
    runs = []
    for label in labels:
        api = VARIANTS[label][0] if label in VARIANTS else label
        work = os.path.join(top, label.replace("*", "-documented"))
        os.makedirs(work)
        extra = []
        if api == "jira":
            extra = ["--jira-user-offset-minutes", str(args.jira_user_offset_minutes)] + (["--jira-legacy-removed"] if args.jira_legacy_removed else [])
        run = Run(label, api, args.ferry, args.count, work, extra)
        try:
            run.scenario()
        finally:
            run.server.stop()
        runs.append(run)
        print_details(run)
    print()
    print("| API | converged | clean rounds | mismatches/comparisons | final (pass / --sweep) | exit codes | no-change requests: ferry vs careful |")
    print("|---|---|---|---|---|---|---|")
    for run in runs:
        s = run.summary()
        print("| %s | %s | %s | %d/%d | %s | %s | %s vs %s |" % (s["api"], "yes" if s["converged"] else "no", s["clean_rounds"],
                                                              s["mismatches"], s["comparisons"], s["final"], ",".join(s["exits"]),
                                                              s["no_change"], s["careful"]))
    print()
    for label in labels:
        print("careful %s: %s" % (label, CAREFUL[label][1]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump([dict(summary=r.summary(), rounds=r.rounds) for r in runs], f, indent=1, ensure_ascii=False)
    if args.keep:
        print("work directories kept in", top)
    else:
        shutil.rmtree(top, ignore_errors=True)
    # An API passes when every round is clean (what is excused aside) and a pass with nothing
    # changed costs no more requests than a careful client of that API's change feed.
    passed = sum(1 for r in runs if r.summary()["converged"] and r.summary()["no_change"] <= int(r.summary()["careful"]))
    print("%d passed, %d failed" % (passed, len(runs) - passed))
    sys.exit(0 if passed == len(runs) else 1)


def print_details(run):
    print("== %s (%s, store %s)" % (run.label, run.case["example"], run.case["store"]))
    for r in run.rounds:
        flag = "ok " if r["mismatches"] == 0 and r["rc"] == 0 else "BAD"
        excused = "".join([", %d awaiting a sweep" % r["awaiting_sweep"] if r["awaiting_sweep"] else "",
                           ", %d changed or made after the pass began" % r["moved_under_pass"] if r["moved_under_pass"] else ""])
        print("  %s %-40s exit %-7s req %-4s mismatches %d/%d (missing %d, extra %d, stale %d%s)" % (
            flag, r["round"], r["rc"], r["requests"], r["mismatches"], r["comparisons"], r["missing_n"], r["extra_n"], r["stale_n"], excused))
        if r["rc"] != 0:
            for line in r["output"][-2:]:
                print("        | " + line[:220])
        for kind in ("missing", "extra", "stale"):
            if r[kind]:
                print("        %s: %s" % (kind, "; ".join(r[kind][:3])))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
