#!/usr/bin/env python3
"""Regression check: a Parse write whose updatedAt is not after the stored cursor must still be
synced (found while building the crash loop; fixed by ParseSource's lookback window, default 30 s).

    python3 Tests/Reliability/parse_late_write_repro.py [--ferry .build/debug/ferry]

ParseSource pages incrementally with the keyset condition
`updatedAt > T OR (updatedAt = T AND objectId > I)` after the stored cursor (T, I). Parse Server
stamps `updatedAt` on the app server *before* the write commits, so a write can become visible
after a pass has already moved the cursor past its stamp:
  - two saves in the same millisecond T, the one with the smaller objectId committing after a
    pass read the other (case "same millisecond"), or
  - a save stamped T - 50 ms that commits after a pass read a save stamped T (a slow Mongo write,
    or two app servers whose clocks differ by 50 ms; case "stamped 50 ms earlier").
Such an object is changed on the server but the replica keeps the old version for good: every
later pass starts after (T, I), and reconciliation only lists ids (it sweeps deletions, it does
not compare versions).

The script: seeds 50 Quote objects into Tests/Servers/parse_server.py, syncs them with
`ferry sync`, then for each case updates one object whose objectId sorts before the cursor's,
stamping it with the cursor's updatedAt (or 50 ms before it) through the test server's
/__admin/mutate "ids" + "updated_at" switch, runs `ferry sync` twice more, and compares that
object's version in the replica with the server's. Exit 1 when the replica is stale (the bug),
0 when Ferry picks the write up. scripts/test.sh runs it in the crash-loop phase.

The fix: every incremental pass starts `lookback` (store option, default 30s) before the
stored cursor; objects read again carry the version the replica has and the merge leaves them
alone. With `lookback = 0` this script reproduces the bug again.
"""

import argparse
import datetime
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reliability_servers as cl  # noqa: E402  (the Parse test server)


def iso_minus(iso, ms):
    t = datetime.datetime.fromisoformat(iso.replace("Z", "+00:00")) - datetime.timedelta(milliseconds=ms)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (t.microsecond // 1000)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ferry", default=os.environ.get("FERRY") or os.path.join(cl.ROOT, ".build", "debug", "ferry"))
    a = ap.parse_args()
    workdir = tempfile.mkdtemp(prefix="ferry-late-write-")
    parse = cl.ParseServer(workdir)
    stale = 0
    try:
        parse.admin("seed", {"class": "Quote", "count": 50, "seed": 7})
        secret = os.path.join(workdir, "key")
        with open(secret, "w") as f:
            f.write(cl.MASTER_KEY)
        os.chmod(secret, 0o600)
        conf = os.path.join(workdir, "ferry.conf")
        db_path = os.path.join(workdir, "ferry.db")
        with open(conf, "w") as f:
            f.write("[ferry]\ndatabase = %s\n\n[store quotes]\nkind = parse\nurl = %s\nclass = Quote\n"
                    "application-id = %s\nmaster-key = file:%s\npage-size = 10\n"
                    % (db_path, parse.url, cl.APP_ID, secret))

        def sync():
            r = subprocess.run([a.ferry, "sync", "--config", conf], capture_output=True, text=True)
            if r.returncode != 0:
                raise SystemExit("ferry sync failed: %s" % r.stderr)

        def cursor():
            db = sqlite3.connect(db_path)
            try:
                return json.loads(db.execute("SELECT cursor FROM ferry_sync_state WHERE store='quotes'").fetchone()[0])
            finally:
                db.close()

        def replica_version(oid):
            db = sqlite3.connect(db_path)
            try:
                row = db.execute("SELECT version FROM quotes WHERE id=?", (oid,)).fetchone()
                return row[0] if row else None
            finally:
                db.close()

        sync()
        for case, back_ms in (("same millisecond", 0), ("stamped 50 ms earlier", 50)):
            c = cursor()
            server = parse.dump()
            victim = min(oid for oid in server if oid < c["objectId"])
            stamp = iso_minus(c["updatedAt"], back_ms)
            parse.admin("mutate", {"class": "Quote", "ids": [victim], "updated_at": stamp, "seed": 1})
            sync()
            sync()
            want = parse.dump()[victim][0]
            have = replica_version(victim)
            ok = want == have
            stale += 0 if ok else 1
            print("%-22s cursor (%s, %s); updated %s with updatedAt %s; server version %s, replica %s: %s"
                  % (case + ":", c["updatedAt"], c["objectId"], victim, stamp, want, have,
                     "synced" if ok else "STALE (never synced)"))
            # Let the next case start from a cursor past this write.
            parse.admin("mutate", {"class": "Quote", "update": 1, "seed": 2})
            sync()
    finally:
        parse.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    print("REPRODUCED: %d of 2 late writes never reach the replica" % stale if stale else "not reproduced")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
